//! Access requests: created on a consent session, read, shown on the hosted page, decided.

use idconsent_consent::{
    ConsentError, CreateRequest, DecidedBy, Decision, Requester, Session, SessionStatus,
    TransactionInput,
};
use idconsent_kernel::id::SessionId;
use idconsent_kernel::{DisplayText, Intent, ValidationErrors, WebUrl};
use idconsent_webhook::Effects;

use super::{
    CreateAccessRequest, HostedPage, NewAccessRequest, OAuthService, RequestStatus, stored_claims,
};
use crate::code::{self, NewCode};
use crate::error::OAuthError;
use crate::events::{OAuthApproved, OAuthRedirect};
use crate::model::{AccessRequest, ClaimKey, Grant, claims_object, grant_code_sealed_for};
use crate::pkce::{self, ChallengeMethod};
use crate::ports::StoreError;
use crate::sandbox;

impl OAuthService {
    /// Creates the consent session (intent OAUTH) and its access request; answers with the
    /// session's QR code.
    pub async fn create(
        &self,
        requester: &Requester,
        registered_redirects: &[String],
        default_callback: &str,
        input: CreateAccessRequest,
    ) -> Result<NewAccessRequest, OAuthError> {
        let session_id: SessionId = self.ports.ids.next();
        let (session, request) = self
            .create_as(
                requester,
                registered_redirects,
                default_callback,
                input,
                session_id,
            )
            .await?;
        let qr_png = self.ports.consents.qr_png(&session.id)?;
        Ok(NewAccessRequest {
            session,
            request,
            qr_png,
        })
    }

    /// A request whose code only this service can redeem: the PKCE verifier is `verifier` of
    /// the new session's id (derived by the caller with a key of its own, so nothing is
    /// stored), and `input.redirect_uri` is taken as registered (no browser takes part: OpenID
    /// CIBA). `input.code_challenge` is ignored.
    pub async fn create_with_verifier(
        &self,
        requester: &Requester,
        default_callback: &str,
        mut input: CreateAccessRequest,
        verifier: impl FnOnce(&SessionId) -> String,
    ) -> Result<(Session, AccessRequest), OAuthError> {
        let session_id: SessionId = self.ports.ids.next();
        input.code_challenge = pkce::challenge_of(&verifier(&session_id), ChallengeMethod::S256);
        input.code_challenge_method = Some("S256".into());
        let registered = [input.redirect_uri.clone()];
        self.create_as(requester, &registered, default_callback, input, session_id)
            .await
    }

    async fn create_as(
        &self,
        requester: &Requester,
        registered_redirects: &[String],
        default_callback: &str,
        input: CreateAccessRequest,
        session_id: SessionId,
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
        let deep_link = self.ports.consents.qr_payload(&view.session.id);
        Ok(HostedPage {
            view,
            names,
            deep_link,
        })
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
}
