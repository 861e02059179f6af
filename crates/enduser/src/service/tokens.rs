//! App tokens: sign-in with a passkey, refresh rotation, and the access token's checks.

use idconsent_kernel::Timestamp;
use idconsent_kernel::id::EndUserId;
use serde_json::Value;

use super::{EndUserService, INVALID_TOKEN, REFRESH_PURPOSE, TokenPair, check_installation};
use crate::error::EndUserError;
use crate::model::{DeviceStatus, EndUser, LOGIN, Purpose, RefreshToken};
use crate::ports::{AccessClaims, NextToken, Rotation};

impl EndUserService {
    /// `POST /v6/auth/login`: an assertion with purpose `login` buys a token pair bound to
    /// `installation`.
    pub async fn login(
        &self,
        challenge_id: &str,
        credential: &Value,
        installation: &str,
    ) -> Result<TokenPair, EndUserError> {
        let installation = check_installation(installation)?;
        let login = Purpose {
            kind: LOGIN,
            id: None,
        };
        let asserted = self.assert(challenge_id, credential, Some(&login)).await?;
        let now = self.now();
        let refresh_token = self.new_refresh_token();
        let record = RefreshToken {
            hash: self.refresh_hash(&refresh_token),
            family: self.ports.ids.next(),
            user_id: asserted.user.id.clone(),
            device_id: asserted.device.id.clone(),
            installation: installation.to_owned(),
            expires_at: now.plus(self.settings.refresh_ttl),
            used_at: None,
            revoked_at: None,
            created_at: now,
        };
        self.ports.refresh_tokens.insert(&record).await?;
        self.token_pair(&record, refresh_token, now)
    }

    /// `POST /v6/auth/refresh`: rotates the refresh token; a reused one revokes its family.
    pub async fn refresh(
        &self,
        refresh_token: &str,
        installation: &str,
    ) -> Result<TokenPair, EndUserError> {
        let installation = check_installation(installation)?;
        let now = self.now();
        let next_token = self.new_refresh_token();
        let next = NextToken {
            hash: self.refresh_hash(&next_token),
            installation: installation.to_owned(),
            expires_at: now.plus(self.settings.refresh_ttl),
        };
        let presented = self.refresh_hash(refresh_token.trim());
        match self
            .ports
            .refresh_tokens
            .rotate(&presented, &next, now)
            .await?
        {
            Rotation::Rotated(stored) => self.token_pair(&stored, next_token, now),
            Rotation::Reused(_) => Err(EndUserError::Unauthorized(
                "Refresh token was already used; every session of this sign-in is revoked",
            )),
            Rotation::Invalid => Err(EndUserError::Unauthorized("Invalid refresh token")),
        }
    }

    /// Checks an app access token: signature, expiry, the `X-Device-ID` it was issued for,
    /// that its device is still active and that its sign-in (refresh family) was not revoked —
    /// a reused refresh token stops the access tokens of its family at once, not at expiry.
    pub async fn authorize(
        &self,
        access_token: &str,
        installation: &str,
    ) -> Result<AccessClaims, EndUserError> {
        let claims = self
            .ports
            .access_tokens
            .verify(access_token, self.now())
            .map_err(|_| INVALID_TOKEN)?;
        if claims.installation != installation {
            return Err(INVALID_TOKEN);
        }
        let device = self.ports.devices.find(&claims.device).await?;
        if !device.is_some_and(|d| d.status == DeviceStatus::Active && d.user_id == claims.user) {
            return Err(INVALID_TOKEN);
        }
        if self
            .ports
            .refresh_tokens
            .family_revoked(&claims.family)
            .await?
        {
            return Err(INVALID_TOKEN);
        }
        Ok(claims)
    }

    /// The phone number behind an access token's user.
    pub async fn user(&self, id: &EndUserId) -> Result<EndUser, EndUserError> {
        self.ports
            .enrollments
            .user(id)
            .await?
            .ok_or(EndUserError::Unauthorized("Invalid or expired token"))
    }

    fn token_pair(
        &self,
        record: &RefreshToken,
        refresh_token: String,
        now: Timestamp,
    ) -> Result<TokenPair, EndUserError> {
        let access_token = self
            .ports
            .access_tokens
            .issue(&AccessClaims {
                user: record.user_id.clone(),
                device: record.device_id.clone(),
                family: record.family.clone(),
                installation: record.installation.clone(),
                issued_at: now,
                expires_at: now.plus(self.settings.access_ttl),
            })
            .map_err(|error| EndUserError::Unavailable(Box::new(error)))?;
        Ok(TokenPair {
            access_token,
            refresh_token,
            expires_in: self.settings.access_ttl.as_secs(),
        })
    }

    fn new_refresh_token(&self) -> String {
        format!("rt_{}", self.ports.random.hex(32))
    }

    fn refresh_hash(&self, token: &str) -> String {
        self.ports.hasher.hex(REFRESH_PURPOSE, token.as_bytes())
    }
}
