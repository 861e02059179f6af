//! An in-memory [`OAuthRepository`] for service tests; it passes the same contract suite as the
//! diesel adapter. A grant is read with its session from the session store it is given (as the
//! diesel store joins the two tables); one lock around the OAuth state makes each redemption
//! atomic, as the contract asks.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use idconsent_consent::SessionRepository;
use idconsent_kernel::Timestamp;
use idconsent_kernel::id::{ApplicationId, SessionId};

use crate::model::{AccessRequest, Grant, GrantWithSession, IssuedToken, SessionState};
use crate::ports::{Decide, OAuthRepository, Redemption, StoreError, Verdict};

#[derive(Debug, Default)]
struct State {
    requests: HashMap<SessionId, AccessRequest>,
    /// Grants by code id.
    grants: HashMap<String, Grant>,
    tokens: HashMap<String, IssuedToken>,
}

#[derive(Debug)]
pub struct InMemoryOAuth {
    state: Mutex<State>,
    sessions: Arc<dyn SessionRepository>,
}

impl InMemoryOAuth {
    /// OAuth state whose grants are read with the sessions of `sessions`.
    pub fn new(sessions: Arc<dyn SessionRepository>) -> Self {
        Self {
            state: Mutex::default(),
            sessions,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn unavailable(error: impl std::error::Error + Send + Sync + 'static) -> StoreError {
    StoreError::Unavailable(Box::new(error))
}

#[async_trait]
impl OAuthRepository for InMemoryOAuth {
    async fn insert_request(&self, request: &AccessRequest) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.requests.contains_key(&request.session_id) {
            return Err(StoreError::Duplicate);
        }
        state
            .requests
            .insert(request.session_id.clone(), request.clone());
        Ok(())
    }

    async fn find_request(&self, session: &SessionId) -> Result<Option<AccessRequest>, StoreError> {
        Ok(self.lock().requests.get(session).cloned())
    }

    async fn insert_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        let mut state = self.lock();
        let taken = state.grants.contains_key(&grant.code_id)
            || state
                .grants
                .values()
                .any(|known| known.session_id == grant.session_id);
        if taken {
            return Err(StoreError::Duplicate);
        }
        state.grants.insert(grant.code_id.clone(), grant.clone());
        Ok(())
    }

    async fn grant_of_session(&self, session: &SessionId) -> Result<Option<Grant>, StoreError> {
        Ok(self
            .lock()
            .grants
            .values()
            .find(|grant| &grant.session_id == session)
            .cloned())
    }

    async fn redeem(
        &self,
        code_id: &str,
        at: Timestamp,
        decide: Decide,
    ) -> Result<Redemption, StoreError> {
        let Some(session_id) = self
            .lock()
            .grants
            .get(code_id)
            .map(|grant| grant.session_id.clone())
        else {
            return Ok(Redemption::Untouched);
        };
        // The session's stored status, as the diesel store's join reads it.
        let session = self
            .sessions
            .find(&session_id)
            .await
            .map_err(unavailable)?
            .map(|session| SessionState {
                status: session.status,
                environment: session.environment,
            });
        let mut state = self.lock();
        let Some(grant) = state.grants.get(code_id).cloned() else {
            return Ok(Redemption::Untouched);
        };
        let found = GrantWithSession { grant, session };
        let verdict = decide(&found);
        if verdict == Verdict::Ignore {
            return Ok(Redemption::Untouched);
        }
        if found.grant.consumed_at.is_some() {
            if let Some(token) = found
                .grant
                .token_id
                .as_ref()
                .and_then(|id| state.tokens.get_mut(id))
                && token.revoked_at.is_none()
            {
                token.revoked_at = Some(at);
            }
            return Ok(Redemption::Reused);
        }
        let issued = match verdict {
            Verdict::Issue(token) => Some(token),
            _ => None,
        };
        if let Some(grant) = state.grants.get_mut(code_id) {
            grant.consumed_at = Some(at);
            grant.token_id = issued.as_ref().map(|token| token.token_id.clone());
        }
        if let Some(token) = &issued {
            state
                .tokens
                .insert(token.token_id.clone(), (**token).clone());
        }
        Ok(Redemption::Spent {
            found: Box::new(found),
            issued,
        })
    }

    async fn find_token(&self, token_id: &str) -> Result<Option<IssuedToken>, StoreError> {
        Ok(self.lock().tokens.get(token_id).cloned())
    }

    async fn insert_token(&self, token: &IssuedToken) -> Result<(), StoreError> {
        let mut state = self.lock();
        if state.tokens.contains_key(&token.token_id) {
            return Err(StoreError::Duplicate);
        }
        state.tokens.insert(token.token_id.clone(), token.clone());
        Ok(())
    }

    async fn revoke_token(
        &self,
        token_id: &str,
        application: &ApplicationId,
        at: Timestamp,
    ) -> Result<bool, StoreError> {
        let mut state = self.lock();
        match state.tokens.get_mut(token_id) {
            Some(token) if &token.application_id == application && token.revoked_at.is_none() => {
                token.revoked_at = Some(at);
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

#[cfg(all(test, feature = "contract"))]
mod contract {
    use std::sync::Arc;

    use idconsent_consent::SessionRepository;
    use idconsent_consent::testing::InMemorySessions;
    use idconsent_webhook::testing::InMemoryDeliveries;

    use super::InMemoryOAuth;
    use crate::ports::OAuthRepository;

    type Made = (Arc<dyn OAuthRepository>, Arc<dyn SessionRepository>, ());

    async fn store() -> Option<Made> {
        let sessions: Arc<dyn SessionRepository> = Arc::new(InMemorySessions::new(Arc::new(
            InMemoryDeliveries::default(),
        )));
        Some((Arc::new(InMemoryOAuth::new(sessions.clone())), sessions, ()))
    }

    crate::oauth_repository_contract!(store);
}

/// Service tests on the fakes: the OAuth rules without a database or HTTP (issue 13 §7).
#[cfg(test)]
mod service_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use idconsent_approval::{ApplicationDirectory, ApplicationNames, DirectoryError};
    use idconsent_consent::testing::{InMemorySessions, TextQr};
    use idconsent_consent::{
        ConsentPorts, ConsentService, ConsentSettings, DecidedBy, Decision, RecipientDirectory,
        Requester, SessionStatus,
    };
    use idconsent_kernel::id::{ApplicationId, ClientId, TypedId};
    use idconsent_kernel::{
        Environment, Intent, ManualClock, OsRandom, PhoneNumber, Timestamp, UlidGenerator,
        Unmetered,
    };
    use idconsent_vault_ring::{AesGcmVault, HmacKeyedHash, MasterKey};
    use idconsent_webhook::Effects;
    use idconsent_webhook::testing::InMemoryDeliveries;
    use serde_json::{Value, json};

    use super::InMemoryOAuth;
    use crate::error::{INVALID_GRANT, OAuthError};
    use crate::model::{ClaimKey, VerifiedValue};
    use crate::pkce::{ChallengeMethod, challenge_of};
    use crate::ports::{AccessTokenClaims, ClaimSource, StoreError, TokenError, TokenSigner};
    use crate::service::{CreateAccessRequest, OAuthPorts, OAuthService, OAuthSettings};

    /// Signs nothing: a token is its claims' token id, so the tests can read what was issued.
    /// The real ES256 signer has its own tests (crates/jose).
    #[derive(Debug, Default)]
    struct RecordingSigner(Mutex<Vec<AccessTokenClaims>>);

    impl TokenSigner for RecordingSigner {
        fn sign(&self, claims: &AccessTokenClaims) -> Result<String, TokenError> {
            self.0.lock().unwrap().push(claims.clone());
            Ok(format!("token:{}", claims.token_id))
        }
        fn verify(&self, token: &str, _: Timestamp) -> Result<AccessTokenClaims, TokenError> {
            let id = token.strip_prefix("token:").ok_or(TokenError::Invalid)?;
            self.0
                .lock()
                .unwrap()
                .iter()
                .find(|claims| claims.token_id == id)
                .cloned()
                .ok_or(TokenError::Invalid)
        }
        fn jwks(&self) -> Value {
            json!({"keys": []})
        }
    }

    #[derive(Debug)]
    struct Everyone;

    #[async_trait]
    impl RecipientDirectory for Everyone {
        async fn is_enrolled(
            &self,
            _: &PhoneNumber,
        ) -> Result<bool, idconsent_consent::StoreError> {
            Ok(true)
        }
    }

    #[async_trait]
    impl ApplicationDirectory for Everyone {
        async fn names(
            &self,
            _: &ApplicationId,
        ) -> Result<Option<ApplicationNames>, DirectoryError> {
            Ok(Some(ApplicationNames {
                merchant: "Example Shop".into(),
                application: "Checkout".into(),
            }))
        }
    }

    #[async_trait]
    impl ClaimSource for Everyone {
        async fn verified(
            &self,
            phone: &PhoneNumber,
        ) -> Result<Vec<(ClaimKey, VerifiedValue)>, StoreError> {
            Ok(vec![(
                ClaimKey::PhoneNumber,
                VerifiedValue {
                    value: json!(phone.as_str()),
                    source: "sms_otp",
                    verified_at: Timestamp::from_millis(1_000),
                },
            )])
        }
    }

    const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    const REDIRECT: &str = "https://shop.example/oauth/callback";

    struct Fixture {
        service: OAuthService,
        requester: Requester,
    }

    fn fixture() -> Fixture {
        let clock = Arc::new(ManualClock::new(Timestamp::from_millis(1_763_719_200_000)));
        let ids = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
        let deliveries = Arc::new(InMemoryDeliveries::default());
        let sessions = Arc::new(InMemorySessions::new(deliveries));
        let consents = Arc::new(ConsentService::new(
            ConsentPorts {
                sessions: sessions.clone(),
                recipients: Arc::new(Everyone),
                metering: Arc::new(Unmetered),
                clock: clock.clone(),
                ids: ids.clone(),
                outbox_written: None,
                qr: Arc::new(TextQr),
            },
            ConsentSettings::default(),
        ));
        let master = MasterKey::new([9; 32]);
        let service = OAuthService::new(
            OAuthPorts {
                consents,
                directory: Arc::new(Everyone),
                store: Arc::new(InMemoryOAuth::new(sessions)),
                claims: Arc::new(Everyone),
                signer: Arc::new(RecordingSigner::default()),
                vault: Arc::new(AesGcmVault::new(&master)),
                hasher: Arc::new(HmacKeyedHash::new(&master)),
                clock,
                random: Arc::new(OsRandom),
                ids,
            },
            OAuthSettings::new("https://id.example"),
        );
        Fixture {
            service,
            requester: Requester {
                application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
                client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C").unwrap(),
                environment: Environment::Sandbox,
                allowed_intents: vec![Intent::Oauth, Intent::Login, Intent::Transaction],
            },
        }
    }

    /// An approved request's code.
    async fn approved_code(fixture: &Fixture) -> String {
        let session = fixture
            .service
            .create(
                &fixture.requester,
                &[REDIRECT.to_owned()],
                "https://shop.example/hooks",
                CreateAccessRequest {
                    recipient: "+15550000002".into(),
                    redirect_uri: REDIRECT.into(),
                    code_challenge: challenge_of(VERIFIER, ChallengeMethod::S256),
                    claims: vec!["phone_number".into()],
                    scopes: vec!["openid".into()],
                    ..CreateAccessRequest::default()
                },
            )
            .await
            .unwrap()
            .session;
        let id = session.id.as_str().to_owned();
        let decided = fixture
            .service
            .decide(
                session,
                Decision::Approve,
                DecidedBy::SandboxHelper,
                Effects::default(),
            )
            .await
            .unwrap();
        assert_eq!(decided.status, SessionStatus::Approved);
        let status = fixture
            .service
            .status(&fixture.requester, &id)
            .await
            .unwrap();
        status.code.expect("an approved request shows its code")
    }

    #[tokio::test]
    async fn a_code_is_exchanged_once_and_a_replay_revokes_the_token() {
        let fixture = fixture();
        let code = approved_code(&fixture).await;
        let grant = fixture
            .service
            .exchange(&fixture.requester, &code, VERIFIER)
            .await
            .unwrap();
        assert!(grant.access_token.starts_with("token:"));
        let introspected = fixture
            .service
            .introspect(&fixture.requester, &grant.access_token)
            .await;
        assert!(introspected.is_some(), "the token is active");

        let replay = fixture
            .service
            .exchange(&fixture.requester, &code, VERIFIER)
            .await;
        assert!(matches!(replay, Err(OAuthError::BadRequest(message)) if message == INVALID_GRANT));
        assert!(
            fixture
                .service
                .introspect(&fixture.requester, &grant.access_token)
                .await
                .is_none(),
            "a reused code revokes the token it produced"
        );
    }

    #[tokio::test]
    async fn a_wrong_verifier_spends_the_code_and_another_application_gets_nothing() {
        let fixture = fixture();
        let code = approved_code(&fixture).await;
        let stranger = Requester {
            application_id: ApplicationId::parse("app_01JDKX9Q6N8V3T5R7W2Y4Z6B9D").unwrap(),
            client_id: ClientId::parse("cli_01JDKX9Q6N8V3T5R7W2Y4Z6B9D").unwrap(),
            ..fixture.requester.clone()
        };
        assert!(matches!(
            fixture.service.exchange(&stranger, &code, VERIFIER).await,
            Err(OAuthError::BadRequest(_))
        ));
        // Another application's attempt changed nothing: the owner still exchanges it.
        fixture
            .service
            .exchange(&fixture.requester, &code, VERIFIER)
            .await
            .unwrap();
        // A wrong verifier spends the code: the right one afterwards gets nothing.
        let code = approved_code(&fixture).await;
        let wrong = fixture
            .service
            .exchange(&fixture.requester, &code, "x".repeat(43).as_str())
            .await;
        assert!(matches!(wrong, Err(OAuthError::BadRequest(_))));
        assert!(matches!(
            fixture
                .service
                .exchange(&fixture.requester, &code, VERIFIER)
                .await,
            Err(OAuthError::BadRequest(_))
        ));
    }
}
