//! Tokens: the code exchanged under PKCE, and the tokens answered for (userinfo,
//! introspection, revocation, keys).

use idconsent_consent::{Requester, SessionStatus};
use idconsent_kernel::id::Entropy;
use idconsent_kernel::{Timestamp, constant_time_eq};
use serde_json::Value;

use super::{
    ActiveToken, ExchangeOptions, OAuthService, TokenGrant, UserInfo, pairwise_subject,
    stored_claims,
};
use crate::code;
use crate::error::{INVALID_GRANT, OAuthError};
use crate::model::{GrantWithSession, IssuedToken};
use crate::pkce;
use crate::ports::{AccessTokenClaims, Redemption, Verdict};

impl OAuthService {
    /// `POST /v1/oauth/token`. Every failure is the same 400; any attempt by the owning
    /// application consumes the code, and a second use revokes the token of the first.
    ///
    /// The grant is read, judged and spent in one store transaction (the judgement runs inside
    /// it, see [`OAuthRepository::redeem`]); the access token is signed after the commit, from
    /// the token record that was stored.
    pub async fn exchange(
        &self,
        requester: &Requester,
        code: &str,
        verifier: &str,
    ) -> Result<TokenGrant, OAuthError> {
        self.exchange_with(requester, code, verifier, &ExchangeOptions::default())
            .await
    }

    /// The exchange with the checks and the subject of the OpenID Connect token endpoint: the
    /// `redirect_uri` of the authorization request must be presented again (RFC 6749 §4.1.3;
    /// a mismatch spends the code like a wrong verifier), and the token's subject is the
    /// user's pairwise identifier for `pairwise_sector` rather than their phone (ADR 0042).
    pub async fn exchange_with(
        &self,
        requester: &Requester,
        code: &str,
        verifier: &str,
        options: &ExchangeOptions,
    ) -> Result<TokenGrant, OAuthError> {
        let Some(presented) = code::locate(code.trim(), self.ports.hasher.as_ref()) else {
            return Err(OAuthError::BadRequest(INVALID_GRANT));
        };
        let now = self.now();
        let verdict = ExchangeAttempt {
            code_hash: presented.hash,
            requester: requester.clone(),
            verifier: verifier.to_owned(),
            // Time-ordered, like other ids: a random key would insert into a random leaf of the
            // token table's index on every exchange.
            token_id: format!("at_{}", self.ports.ids.body(Entropy::Sortable)),
            now,
            expires_at: now.plus(self.settings.token_ttl),
            redirect_uri: options.redirect_uri.clone(),
            subject: options.pairwise_sector.as_ref().map(|sector| {
                let hasher = self.ports.hasher.clone();
                let sector = sector.clone();
                Box::new(move |phone: &str| pairwise_subject(hasher.as_ref(), &sector, phone))
                    as SubjectOf
            }),
        };
        let redemption = self
            .ports
            .store
            .redeem(
                &presented.id,
                now,
                Box::new(move |found| verdict.judge(found)),
            )
            .await?;
        let Redemption::Spent {
            found,
            issued: Some(issued),
        } = redemption
        else {
            return Err(OAuthError::BadRequest(INVALID_GRANT));
        };
        let access_token = self
            .ports
            .signer
            .sign(&AccessTokenClaims {
                issuer: self.settings.issuer.clone(),
                audience: issued.client_id.to_string(),
                subject: issued.subject.clone(),
                scopes: issued.scopes.clone(),
                token_id: issued.token_id.clone(),
                issued_at: issued.issued_at,
                expires_at: issued.expires_at,
            })
            .map_err(|error| OAuthError::Unavailable(Box::new(error)))?;
        Ok(TokenGrant {
            access_token,
            expires_in: self.settings.token_ttl.as_secs(),
            claims: stored_claims(&issued.claims)?,
            subject: issued.subject,
            scopes: issued.scopes,
            state: found.grant.state,
            session_id: found.grant.session_id,
            approved_at: found.grant.approved_at,
            token_id: issued.token_id,
        })
    }

    /// A new access token with what `from` granted (the same subject, scopes and claims), for
    /// a refresh: `from` must be the requester's and not revoked (a token revoked because its
    /// code was reused ends everything issued after it). Returns the signed token and its
    /// record.
    pub async fn reissue(
        &self,
        requester: &Requester,
        from: &str,
    ) -> Result<(String, IssuedToken), OAuthError> {
        let refused = OAuthError::BadRequest("The grant is no longer valid");
        let Some(previous) = self.ports.store.find_token(from).await? else {
            return Err(refused);
        };
        if previous.application_id != requester.application_id
            || previous.environment != requester.environment
            || previous.revoked_at.is_some()
        {
            return Err(refused);
        }
        let now = self.now();
        let issued = IssuedToken {
            token_id: format!("at_{}", self.ports.ids.body(Entropy::Sortable)),
            issued_at: now,
            expires_at: now.plus(self.settings.token_ttl),
            revoked_at: None,
            ..previous
        };
        self.ports.store.insert_token(&issued).await?;
        let access_token = self
            .ports
            .signer
            .sign(&AccessTokenClaims {
                issuer: self.settings.issuer.clone(),
                audience: issued.client_id.to_string(),
                subject: issued.subject.clone(),
                scopes: issued.scopes.clone(),
                token_id: issued.token_id.clone(),
                issued_at: issued.issued_at,
                expires_at: issued.expires_at,
            })
            .map_err(|error| OAuthError::Unavailable(Box::new(error)))?;
        Ok((access_token, issued))
    }

    /// The access tokens' lifetime.
    pub fn token_ttl(&self) -> std::time::Duration {
        self.settings.token_ttl
    }

    /// A live token: signature, expiry and not revoked.
    async fn live_token(&self, token: &str) -> Option<IssuedToken> {
        let now = self.now();
        let claims = self.ports.signer.verify(token.trim(), now).ok()?;
        let issued = self.ports.store.find_token(&claims.token_id).await.ok()??;
        (issued.revoked_at.is_none() && now < issued.expires_at).then_some(issued)
    }

    /// `GET /v1/oauth/userinfo`: the approved claims of a live access token.
    pub async fn userinfo(&self, token: &str) -> Result<UserInfo, OAuthError> {
        let issued = self
            .live_token(token)
            .await
            .ok_or(OAuthError::Unauthorized("Invalid or expired access token"))?;
        Ok(UserInfo {
            application_id: issued.application_id,
            claims: stored_claims(&issued.claims)?,
            subject: issued.subject,
            scopes: issued.scopes,
        })
    }

    /// RFC 7662: a live token of the asking application and environment; `None` (inactive)
    /// for anything else.
    pub async fn introspect(&self, requester: &Requester, token: &str) -> Option<ActiveToken> {
        self.live_token(token)
            .await
            .filter(|issued| {
                issued.application_id == requester.application_id
                    && issued.environment == requester.environment
            })
            .map(|token| ActiveToken {
                token,
                issuer: self.settings.issuer.clone(),
            })
    }

    /// RFC 7009: revokes a token of the asking application; unknown or foreign tokens are
    /// ignored (the answer is the same, so it reveals nothing).
    pub async fn revoke(&self, requester: &Requester, token: &str) -> Result<(), OAuthError> {
        // An expired token need not verify to be revoked, but it must have been ours.
        let Ok(claims) = self
            .ports
            .signer
            .verify(token.trim(), Timestamp::from_millis(0))
        else {
            return Ok(());
        };
        self.ports
            .store
            .revoke_token(&claims.token_id, &requester.application_id, self.now())
            .await?;
        Ok(())
    }

    /// The JWKS document.
    pub fn jwks(&self) -> Value {
        self.ports.signer.jwks()
    }
}

/// Maps the user's phone to a token's subject.
type SubjectOf = Box<dyn FnOnce(&str) -> String + Send>;

/// One token exchange's judgement of the grant its code names: the rules of CONTRACT §5.
struct ExchangeAttempt {
    /// The keyed hash of the code as presented.
    code_hash: String,
    requester: Requester,
    verifier: String,
    token_id: String,
    now: Timestamp,
    expires_at: Timestamp,
    /// The redirect URI the authorization request named, when the caller must repeat it.
    redirect_uri: Option<String>,
    /// Maps the user's phone to the token's subject (pairwise); the phone itself when `None`.
    subject: Option<SubjectOf>,
}

impl ExchangeAttempt {
    fn judge(self, found: &GrantWithSession) -> Verdict {
        let GrantWithSession { grant, session } = found;
        // A wrong secret for a real id is no code at all, and another application's attempt
        // changes nothing.
        if !constant_time_eq(grant.code_hash.as_bytes(), self.code_hash.as_bytes())
            || grant.application_id != self.requester.application_id
        {
            return Verdict::Ignore;
        }
        // Approved is final: a session that reads approved stays so.
        let session_approved = session.is_some_and(|session| {
            session.status == SessionStatus::Approved
                && session.environment == self.requester.environment
        });
        let valid = grant.consumed_at.is_none()
            && self.now < grant.expires_at
            && session_approved
            && self
                .redirect_uri
                .as_ref()
                .is_none_or(|uri| *uri == grant.redirect_uri)
            && pkce::verify(
                &self.verifier,
                &grant.code_challenge,
                grant.code_challenge_method,
            );
        if !valid {
            return Verdict::Spend;
        }
        let subject = match self.subject {
            Some(map) => map(&grant.subject),
            None => grant.subject.clone(),
        };
        Verdict::Issue(Box::new(IssuedToken {
            token_id: self.token_id,
            application_id: self.requester.application_id,
            client_id: self.requester.client_id,
            environment: self.requester.environment,
            subject,
            scopes: grant.scopes.clone(),
            claims: grant.claims.clone(),
            issued_at: self.now,
            expires_at: self.expires_at,
            revoked_at: None,
        }))
    }
}
