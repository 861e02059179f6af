//! The OAuth use cases: create an access request, read its status, decide it, exchange the code,
//! and answer for the tokens issued (userinfo, introspection, revocation).

use std::sync::Arc;
use std::time::Duration;

use idconsent_approval::{ApplicationDirectory, ApplicationNames};
use idconsent_consent::{
    ConsentError, ConsentService, CreateRequest, DecidedBy, Decision, Requester, Session,
    SessionStatus, TransactionInput,
};
use idconsent_kernel::id::{Entropy, SessionId};
use idconsent_kernel::{
    Clock, DisplayText, IdGenerator, Intent, KeyedHash, RandomSource, SecretVault, Timestamp,
    ValidationErrors, WebUrl, constant_time_eq,
};
use idconsent_webhook::Effects;
use serde_json::Value;

use crate::code::{self, NewCode};
use crate::error::{INVALID_GRANT, OAuthError};
use crate::events::{OAuthApproved, OAuthRedirect};
use crate::model::{
    AccessRequest, ClaimKey, Claims, Grant, GrantWithSession, IssuedToken, claims_object,
    grant_code_sealed_for,
};
use crate::pkce::{self, ChallengeMethod};
use crate::ports::{
    AccessTokenClaims, ClaimSource, OAuthRepository, Redemption, StoreError, TokenSigner, Verdict,
};
use crate::sandbox;

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

/// What the hosted authorization page shows.
#[derive(Debug, Clone)]
pub struct HostedPage {
    pub view: RequestStatus,
    pub names: Option<ApplicationNames>,
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
}

/// What `GET /v1/oauth/userinfo` shows of a live access token.
#[derive(Debug, Clone)]
pub struct UserInfo {
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
    pub fn new(ports: OAuthPorts, settings: OAuthSettings) -> Self {
        Self { ports, settings }
    }

    fn now(&self) -> Timestamp {
        self.ports.clock.now()
    }

    /// Creates the consent session (intent OAUTH) and its access request.
    pub async fn create(
        &self,
        requester: &Requester,
        registered_redirects: &[String],
        default_callback: &str,
        input: CreateAccessRequest,
    ) -> Result<(Session, AccessRequest), OAuthError> {
        let mut errors = ValidationErrors::new();
        if !registered_redirects.contains(&input.redirect_uri) {
            errors.push(
                "redirectUri",
                "must be one of the application's registered redirect URIs",
            );
        }
        let method = match input.code_challenge_method.as_deref() {
            None => Some(ChallengeMethod::S256),
            Some(text) => ChallengeMethod::parse(text),
        };
        if method.is_none() {
            errors.push("codeChallengeMethod", "must be S256 or plain");
        }
        if !pkce::is_well_formed(&input.code_challenge) {
            errors.push(
                "codeChallenge",
                "must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~",
            );
        }
        let mut claims = Vec::new();
        for (index, key) in input.claims.iter().enumerate() {
            match ClaimKey::parse(key) {
                Some(key) if !claims.contains(&key) => claims.push(key),
                Some(_) => {}
                None => errors.push(format!("claims[{index}]"), "is not a known claim"),
            }
        }
        for (index, scope) in input.scopes.iter().enumerate() {
            let valid = !scope.is_empty()
                && scope.len() <= 64
                && scope
                    .bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\');
            if !valid {
                errors.push(
                    format!("scopes[{index}]"),
                    "must be 1 to 64 printable characters without spaces",
                );
            }
        }
        if input.state.as_ref().is_some_and(|state| state.len() > 512) {
            errors.push("state", "must be at most 512 characters");
        }
        // Shown on the approval prompt: no control, text-direction or invisible characters.
        let description = errors
            .check(
                "description",
                DisplayText::parse_optional(input.description.as_deref(), 200),
            )
            .flatten()
            .map(DisplayText::into_string);
        if let Some(url) = &input.callback_url {
            errors.check("callbackUrl", WebUrl::parse(url));
        }
        let method = errors.finish_with(|| method)?;
        if !requester.allowed_intents.contains(&Intent::Oauth) {
            return Err(OAuthError::Forbidden(
                "This application does not enable OAUTH requests",
            ));
        }

        let now = self.now();
        let session_id: SessionId = self.ports.ids.next();
        let request = AccessRequest {
            session_id: session_id.clone(),
            application_id: requester.application_id.clone(),
            client_id: requester.client_id.clone(),
            environment: requester.environment,
            redirect_uri: input.redirect_uri,
            code_challenge: input.code_challenge,
            code_challenge_method: method,
            claims,
            scopes: input.scopes,
            state: input.state,
            description: description.clone(),
            created_at: now,
        };
        // The details first: a session never exists without them (an orphan row without a
        // session, after a refusal below, is invisible and harmless).
        self.ports.store.insert_request(&request).await?;
        let session = self
            .ports
            .consents
            .create_with_id(
                requester,
                CreateRequest {
                    client_id: requester.client_id.to_string(),
                    recipient: input.recipient,
                    intent: Intent::Oauth.as_str().into(),
                    callback_url: input
                        .callback_url
                        .unwrap_or_else(|| default_callback.to_owned()),
                    transaction: TransactionInput {
                        kind: "oauth".into(),
                        description: description
                            .unwrap_or_else(|| "Share your verified details".into()),
                        amount: "0".into(),
                        currency: "EUR".into(),
                        payee: requester.client_id.to_string(),
                    },
                },
                session_id,
            )
            .await?;
        Ok((session, request))
    }

    /// The request's status for the application that created it (anyone else: 404).
    pub async fn status(
        &self,
        requester: &Requester,
        session_id: &str,
    ) -> Result<RequestStatus, OAuthError> {
        let session = self.ports.consents.get(requester, session_id).await?;
        let request = self
            .ports
            .store
            .find_request(&session.id)
            .await?
            .ok_or(OAuthError::NotFound("OAuth request not found"))?;
        let grant = self.ports.store.grant_of_session(&session.id).await?;
        let code = match &grant {
            Some(grant) if grant.consumed_at.is_none() => {
                let plain = self
                    .ports
                    .vault
                    .open(&grant.sealed_code, grant_code_sealed_for(&grant.code_id))
                    .map_err(|error| OAuthError::Unavailable(Box::new(error)))?;
                String::from_utf8(plain).ok()
            }
            _ => None,
        };
        let claims = grant
            .as_ref()
            .map(|grant| stored_claims(&grant.claims))
            .transpose()?;
        Ok(RequestStatus {
            session,
            request,
            grant,
            claims,
            code,
            now: self.now(),
        })
    }

    /// What the public hosted page `GET /oauth/authorize/{sessionId}` needs, without a
    /// requester: the session id is the capability (at least 128 bits of randomness). An unknown
    /// id and a session that is not an OAUTH request are the same `NotFound`. The grant is only
    /// read once the session is approved, and `code` is set only while it is unconsumed and
    /// unexpired: the page never hands out a spent code, whose reuse would revoke the token
    /// issued from it.
    /// The hosted page's view with the names of the merchant and application asking (`None`
    /// when the application no longer exists).
    pub async fn hosted_page(&self, session_id: &str) -> Result<HostedPage, OAuthError> {
        let view = self.hosted_view(session_id).await?;
        let names = self
            .ports
            .directory
            .names(&view.session.application_id)
            .await
            .map_err(|error| OAuthError::Unavailable(Box::new(error)))?;
        Ok(HostedPage { view, names })
    }

    pub async fn hosted_view(&self, session_id: &str) -> Result<RequestStatus, OAuthError> {
        let not_found = || OAuthError::NotFound("OAuth request not found");
        let session = match self.ports.consents.load(session_id).await {
            Ok(session) => session,
            Err(ConsentError::NotFound(_)) => return Err(not_found()),
            Err(other) => return Err(other.into()),
        };
        let request = self.request_of(&session).await?.ok_or_else(not_found)?;
        let now = self.now();
        let grant = if session.status_at(now) == SessionStatus::Approved {
            self.ports.store.grant_of_session(&session.id).await?
        } else {
            None
        };
        let code = match &grant {
            Some(grant) if grant.consumed_at.is_none() && now < grant.expires_at => {
                let plain = self
                    .ports
                    .vault
                    .open(&grant.sealed_code, grant_code_sealed_for(&grant.code_id))
                    .map_err(|error| OAuthError::Unavailable(Box::new(error)))?;
                String::from_utf8(plain).ok()
            }
            _ => None,
        };
        let claims = grant
            .as_ref()
            .map(|grant| stored_claims(&grant.claims))
            .transpose()?;
        Ok(RequestStatus {
            session,
            request,
            grant,
            claims,
            code,
            now,
        })
    }

    /// The access request behind an OAUTH session, if it is one.
    pub async fn request_of(&self, session: &Session) -> Result<Option<AccessRequest>, OAuthError> {
        if session.intent != Intent::Oauth {
            return Ok(None);
        }
        Ok(self.ports.store.find_request(&session.id).await?)
    }

    /// Applies the user's decision to an OAUTH session. Approval issues the authorization code
    /// and assembles the claims; `consent.approved` carries both (with `also` in the same
    /// transaction). When the merchant decided through the sandbox helper, the claims are the
    /// documented sandbox identities' (`crate::sandbox`), never a real user's.
    pub async fn decide(
        &self,
        session: Session,
        decision: Decision,
        by: DecidedBy,
        also: Effects,
    ) -> Result<Session, OAuthError> {
        let request = self
            .request_of(&session)
            .await?
            .ok_or(OAuthError::NotFound("OAuth request not found"))?;
        if decision == Decision::Reject {
            return Ok(self
                .ports
                .consents
                .decide_adding(session, decision, &OAuthRedirect::of(&request), also)
                .await?);
        }
        let now = self.now();
        if session.status_at(now) != SessionStatus::Pending {
            // Let the consent domain say why, without minting a code.
            return Ok(self.ports.consents.decide(session, decision, also).await?);
        }
        let known = match by {
            DecidedBy::Recipient => self.ports.claims.verified(&session.recipient).await?,
            DecidedBy::SandboxHelper => sandbox::claims_of(&session.recipient),
        };
        let claims = claims_object(&request.claims, &known);
        let NewCode {
            code,
            id: code_id,
            hash: code_hash,
        } = code::issue(
            self.ports.ids.as_ref(),
            self.ports.random.as_ref(),
            self.ports.hasher.as_ref(),
        );
        let sealed_code = self
            .ports
            .vault
            .seal(code.as_bytes(), grant_code_sealed_for(&code_id));
        let grant = Grant {
            code_id,
            code_hash,
            sealed_code,
            session_id: session.id.clone(),
            application_id: session.application_id.clone(),
            redirect_uri: request.redirect_uri.clone(),
            code_challenge: request.code_challenge.clone(),
            code_challenge_method: request.code_challenge_method,
            subject: session.recipient.as_str().to_owned(),
            scopes: request.scopes.clone(),
            claims: serde_json::to_value(&claims)
                .map_err(|error| OAuthError::Unavailable(Box::new(error)))?,
            state: request.state.clone(),
            approved_at: now,
            expires_at: now.plus(self.settings.code_ttl),
            consumed_at: None,
            token_id: None,
        };
        // The grant is only redeemable once the session reads approved, so writing it first
        // is safe if the decision below loses a race.
        match self.ports.store.insert_grant(&grant).await {
            Ok(()) => {}
            Err(StoreError::Duplicate) => {
                return Err(ConsentError::Conflict("The session is already decided".into()).into());
            }
            Err(other) => return Err(other.into()),
        }
        let approved = OAuthApproved {
            redirect: OAuthRedirect::of(&request),
            code: &code,
            code_expires_at: grant.expires_at,
            claims: &claims,
            scopes: &request.scopes,
        };
        Ok(self
            .ports
            .consents
            .decide_adding(session, decision, &approved, also)
            .await?)
    }

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
                token_id: issued.token_id,
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
        })
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

/// One token exchange's judgement of the grant its code names: the rules of CONTRACT §5.
struct ExchangeAttempt {
    /// The keyed hash of the code as presented.
    code_hash: String,
    requester: Requester,
    verifier: String,
    token_id: String,
    now: Timestamp,
    expires_at: Timestamp,
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
            && pkce::verify(
                &self.verifier,
                &grant.code_challenge,
                grant.code_challenge_method,
            );
        if !valid {
            return Verdict::Spend;
        }
        Verdict::Issue(Box::new(IssuedToken {
            token_id: self.token_id,
            application_id: self.requester.application_id,
            client_id: self.requester.client_id,
            environment: self.requester.environment,
            subject: grant.subject.clone(),
            scopes: grant.scopes.clone(),
            claims: grant.claims.clone(),
            issued_at: self.now,
            expires_at: self.expires_at,
            revoked_at: None,
        }))
    }
}
