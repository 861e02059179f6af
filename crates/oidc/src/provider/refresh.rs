//! Refresh tokens: `ort_` + 43 base64url characters (32 random bytes), stored as keyed hashes,
//! rotated on every use; a used one presented again revokes its family (every token rotated
//! from the same code), and so does the reuse of the code that started it.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_oauth::OAuthError;

use super::token::TokenResponse;
use super::{OidcProvider, ProtocolError, requester};
use crate::ports::{ClientApplication, RefreshToken, RefreshUse};
use crate::service::AuthenticatedClient;

const PREFIX: &str = "ort_";
/// The keyed-hash purpose of refresh tokens.
pub const REFRESH_TOKEN_PURPOSE: &str = "oidc.refresh-token";

fn invalid_refresh() -> ProtocolError {
    ProtocolError::new(
        "invalid_grant",
        "The refresh token is invalid, expired, revoked or already used",
    )
}

impl OidcProvider {
    fn refresh_hash(&self, token: &str) -> String {
        self.hasher.hex(REFRESH_TOKEN_PURPOSE, token.as_bytes())
    }

    /// A new refresh token of `family`, stored; the token itself is returned once.
    pub(crate) async fn mint_refresh(
        &self,
        application: &ClientApplication,
        family: &str,
        root_token_id: &str,
    ) -> Result<String, ProtocolError> {
        let bytes: [u8; 32] = self.random.bytes();
        let token = format!("{PREFIX}{}", URL_SAFE_NO_PAD.encode(bytes));
        let now = self.clock.now();
        self.refresh
            .insert_refresh(&RefreshToken {
                hash: self.refresh_hash(&token),
                family: family.to_owned(),
                application_id: application.id.clone(),
                root_token_id: root_token_id.to_owned(),
                issued_at: now,
                expires_at: now.plus(self.settings.refresh_ttl),
                used_at: None,
                revoked_at: None,
            })
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        Ok(token)
    }

    /// `grant_type=refresh_token`: a fresh access token and the next refresh token.
    pub(crate) async fn refresh_grant(
        &self,
        client: &AuthenticatedClient,
        presented: Option<&str>,
    ) -> Result<TokenResponse, ProtocolError> {
        let Some(presented) = presented else {
            return Err(ProtocolError::new(
                "invalid_request",
                "refresh_token is missing",
            ));
        };
        let application = &client.application;
        let now = self.clock.now();
        let used = self
            .refresh
            .use_refresh(&self.refresh_hash(presented), &application.id, now)
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        let RefreshUse::Fresh(token) = used else {
            return Err(invalid_refresh());
        };
        if now >= token.expires_at {
            return Err(invalid_refresh());
        }
        let (access_token, issued) = match self
            .oauth
            .reissue(&requester(application), &token.root_token_id)
            .await
        {
            Ok(reissued) => reissued,
            Err(OAuthError::Unavailable(source)) => return Err(ProtocolError::server(&*source)),
            // The first access token was revoked (its code reused, or revoked by the client):
            // the family ends here.
            Err(_) => {
                self.revoke_family(application, &token.family).await?;
                return Err(invalid_refresh());
            }
        };
        let refresh_token = self
            .mint_refresh(application, &token.family, &token.root_token_id)
            .await?;
        Ok(TokenResponse {
            access_token,
            expires_in: self.oauth.token_ttl().as_secs(),
            id_token: None,
            refresh_token: Some(refresh_token),
            scope: issued.scopes.join(" "),
        })
    }

    async fn revoke_family(
        &self,
        application: &ClientApplication,
        family: &str,
    ) -> Result<(), ProtocolError> {
        self.refresh
            .revoke_family(family, &application.id, self.clock.now())
            .await
            .map(|_| ())
            .map_err(|error| ProtocolError::server(&error))
    }

    /// RFC 7009 for a refresh token of the client: its whole family ends. `false` when it is
    /// not one of the client's refresh tokens.
    pub(crate) async fn revoke_refresh(
        &self,
        application: &ClientApplication,
        presented: &str,
    ) -> Result<bool, ProtocolError> {
        if !presented.starts_with(PREFIX) {
            return Ok(false);
        }
        let found = self
            .refresh
            .find_refresh(&self.refresh_hash(presented))
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        match found {
            Some(token) if token.application_id == application.id => {
                self.revoke_family(application, &token.family).await?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Whether `family` (a consent session id) has a live refresh token of `application`; for
    /// introspection of refresh tokens.
    pub(crate) async fn live_refresh(
        &self,
        application: &ClientApplication,
        presented: &str,
    ) -> Result<Option<RefreshToken>, ProtocolError> {
        if !presented.starts_with(PREFIX) {
            return Ok(None);
        }
        let found = self
            .refresh
            .find_refresh(&self.refresh_hash(presented))
            .await
            .map_err(|error| ProtocolError::server(&error))?;
        let now = self.clock.now();
        Ok(found.filter(|token| {
            token.application_id == application.id
                && token.used_at.is_none()
                && token.revoked_at.is_none()
                && now < token.expires_at
        }))
    }
}

/// The family a code's session starts: the session id.
pub(crate) fn family_of(session: &idconsent_kernel::id::SessionId) -> String {
    session.as_str().to_owned()
}
