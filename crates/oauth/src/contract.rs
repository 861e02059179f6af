//! The [`OAuthRepository`] contract. Adapters run it through `oauth_repository_contract!(make)`,
//! `make` being an `async fn() -> Option<(Arc<dyn OAuthRepository>, Arc<dyn SessionRepository>, G)>`:
//! the session store over the same storage, for the grant's view of its session.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use futures_util::future::join_all;
use idconsent_consent::{FloodLimits, Session, SessionRepository, SessionStatus, Transaction};
use idconsent_kernel::id::{ApplicationId, ClientId, Entropy, SessionId};
use idconsent_kernel::{Clock, Currency, Intent, Money, PhoneNumber};
use idconsent_kernel::{
    Environment, IdGenerator, OsRandom, RandomSource, Sealed, SystemClock, Timestamp, UlidGenerator,
};
use serde_json::json;

use crate::model::{AccessRequest, ClaimKey, Grant, GrantWithSession, IssuedToken, SessionState};
use crate::pkce::ChallengeMethod;
use crate::ports::{Decide, OAuthRepository, Redemption, StoreError, Verdict};

#[macro_export]
macro_rules! oauth_repository_contract {
    ($make:path) => {
        $crate::oauth_repository_contract!(@cases $make;
            a_request_is_stored_once_per_session,
            a_grant_is_found_by_session_and_by_code,
            of_concurrent_redemptions_exactly_one_spends,
            concurrent_redemptions_of_different_codes_each_spend_their_own,
            a_reused_code_revokes_its_token,
            a_failed_attempt_consumes_the_code,
            an_ignored_or_unknown_code_changes_nothing,
            only_the_owner_revokes_a_token,
            a_token_is_inserted_once_and_found,
        );
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn a_grant_is_read_with_its_session() {
            let Some((store, sessions, _guard)) = $make().await else { return };
            $crate::contract::a_grant_is_read_with_its_session(store, sessions).await;
        }
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((store, _sessions, _guard)) = $make().await else { return };
                $crate::contract::$case(store).await;
            }
        )*
    };
}

fn ids() -> Arc<dyn IdGenerator> {
    Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ))
}

fn random() -> Arc<dyn RandomSource> {
    Arc::new(OsRandom)
}

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

fn request() -> AccessRequest {
    AccessRequest {
        session_id: ids().next(),
        application_id: ids().next(),
        client_id: ids().next::<ClientId>(),
        environment: Environment::Sandbox,
        redirect_uri: "https://shop.example/cb".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        code_challenge_method: ChallengeMethod::S256,
        claims: vec![ClaimKey::PhoneNumber, ClaimKey::Name],
        scopes: vec!["openid".into(), "profile".into()],
        state: Some("xyz".into()),
        description: Some("Sign up".into()),
        created_at: at(0),
    }
}

fn grant(session: &SessionId, application: &ApplicationId) -> Grant {
    Grant {
        code_id: ids().body(Entropy::Sortable),
        code_hash: random().hex(32),
        sealed_code: Sealed::from_stored("sealed".into()),
        session_id: session.clone(),
        application_id: application.clone(),
        redirect_uri: "https://shop.example/cb".into(),
        code_challenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM".into(),
        code_challenge_method: ChallengeMethod::S256,
        subject: "+15551234567".into(),
        scopes: vec!["openid".into()],
        claims: json!({"phone_number": {"value": "+15551234567", "verified": true}}),
        state: Some("xyz".into()),
        approved_at: at(10),
        expires_at: at(600_010),
        consumed_at: None,
        token_id: None,
    }
}

fn token(application: &ApplicationId) -> IssuedToken {
    IssuedToken {
        token_id: format!("at_{}", random().hex(16)),
        application_id: application.clone(),
        client_id: ids().next(),
        environment: Environment::Sandbox,
        subject: "+15551234567".into(),
        scopes: vec!["openid".into()],
        claims: json!({}),
        issued_at: at(20),
        expires_at: at(3_600_020),
        revoked_at: None,
    }
}

fn issuing(token: &IssuedToken) -> Decide {
    let token = token.clone();
    Box::new(move |_| Verdict::Issue(Box::new(token)))
}

fn spending() -> Decide {
    Box::new(|_| Verdict::Spend)
}

/// The grant of `code_id` with its session as `redeem` reads it, taken with an `Ignore` verdict,
/// so nothing changes: how the suites observe a grant.
pub async fn read_grant(store: &dyn OAuthRepository, code_id: &str) -> Option<GrantWithSession> {
    let seen = Arc::new(Mutex::new(None));
    let record = seen.clone();
    let observe: Decide = Box::new(move |found| {
        *record.lock().unwrap() = Some(found.clone());
        Verdict::Ignore
    });
    let outcome = store.redeem(code_id, at(0), observe).await.unwrap();
    assert_eq!(
        outcome,
        Redemption::Untouched,
        "an ignored redemption changes nothing"
    );
    seen.lock().unwrap().take()
}

/// The token a redemption recorded, if it spent the code.
fn spent(outcome: &Redemption) -> Option<Option<&IssuedToken>> {
    match outcome {
        Redemption::Spent { issued, .. } => Some(issued.as_deref()),
        _ => None,
    }
}

pub async fn a_request_is_stored_once_per_session(store: Arc<dyn OAuthRepository>) {
    let request = request();
    store.insert_request(&request).await.unwrap();
    assert_eq!(
        store.find_request(&request.session_id).await.unwrap(),
        Some(request.clone())
    );
    assert!(matches!(
        store.insert_request(&request).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(store.find_request(&ids().next()).await.unwrap(), None);
}

pub async fn a_grant_is_found_by_session_and_by_code(store: Arc<dyn OAuthRepository>) {
    let grant = grant(&ids().next(), &ids().next());
    store.insert_grant(&grant).await.unwrap();
    assert_eq!(
        store.grant_of_session(&grant.session_id).await.unwrap(),
        Some(grant.clone())
    );
    let by_code = read_grant(store.as_ref(), &grant.code_id).await.unwrap();
    assert_eq!(by_code.grant, grant);
    assert_eq!(by_code.session, None, "no such session was ever stored");
    assert!(
        read_grant(store.as_ref(), &grant.code_hash).await.is_none(),
        "grants are found by their code's id, never by the hash"
    );
    let second = Grant {
        code_id: ids().body(Entropy::Sortable),
        code_hash: random().hex(32),
        ..grant.clone()
    };
    assert!(matches!(
        store.insert_grant(&second).await,
        Err(StoreError::Duplicate)
    ));
}

pub async fn a_grant_is_read_with_its_session(
    store: Arc<dyn OAuthRepository>,
    sessions: Arc<dyn SessionRepository>,
) {
    let application: ApplicationId = ids().next();
    let recipient = PhoneNumber::parse("+15551234567").unwrap();
    let created = SystemClock.now();
    let session = Session {
        id: ids().next(),
        application_id: application.clone(),
        client_id: ids().next(),
        environment: Environment::Live,
        recipient,
        intent: Intent::Oauth,
        transaction: Transaction {
            kind: "oauth".into(),
            description: "Share your verified phone".into(),
            amount: Money::from_minor(0, Currency::parse("USD").unwrap()).unwrap(),
            payee: "Example Shop".into(),
        },
        callback_url: "https://shop.example/hooks".into(),
        status: SessionStatus::Pending,
        created_at: created,
        expires_at: created.plus(std::time::Duration::from_secs(300)),
        decided_at: None,
    };
    sessions
        .create(
            &session,
            &idconsent_webhook::Effects::default(),
            &FloodLimits::default(),
            created,
        )
        .await
        .unwrap();
    let grant = grant(&session.id, &application);
    store.insert_grant(&grant).await.unwrap();
    let state = |status| {
        Some(SessionState {
            status,
            environment: Environment::Live,
        })
    };
    let read = read_grant(store.as_ref(), &grant.code_id).await.unwrap();
    assert_eq!(read.grant, grant);
    assert_eq!(read.session, state(SessionStatus::Pending));
    sessions
        .decide(
            &session.id,
            SessionStatus::Approved,
            created,
            &idconsent_webhook::Effects::default(),
        )
        .await
        .unwrap();
    let read = read_grant(store.as_ref(), &grant.code_id).await.unwrap();
    assert_eq!(read.session, state(SessionStatus::Approved));
}

pub async fn of_concurrent_redemptions_exactly_one_spends(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let grant = grant(&ids().next(), &application);
    store.insert_grant(&grant).await.unwrap();
    let racers = (0..20).map(|_| {
        let store = store.clone();
        let id = grant.code_id.clone();
        let token = token(&application);
        async move {
            let outcome = store.redeem(&id, at(100), issuing(&token)).await.unwrap();
            (outcome, token.token_id)
        }
    });
    let outcomes = join_all(racers).await;
    let winners: Vec<&String> = outcomes
        .iter()
        .filter(|(outcome, _)| spent(outcome).is_some())
        .map(|(_, id)| id)
        .collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|(outcome, _)| spent(outcome).is_some() || *outcome == Redemption::Reused)
    );
    let stored = read_grant(store.as_ref(), &grant.code_id)
        .await
        .unwrap()
        .grant;
    assert_eq!(stored.consumed_at, Some(at(100)));
    assert_eq!(stored.token_id.as_ref(), Some(winners[0]));
    // The losers' attempts were reuse: the winner's token is revoked.
    let issued = store.find_token(winners[0]).await.unwrap().unwrap();
    assert_eq!(issued.revoked_at, Some(at(100)));
}

/// Exchanges arriving together (a store may read and spend them in batches) each read and
/// spend their own code, beside an unknown code.
pub async fn concurrent_redemptions_of_different_codes_each_spend_their_own(
    store: Arc<dyn OAuthRepository>,
) {
    let application: ApplicationId = ids().next();
    let mut grants = Vec::new();
    for _ in 0..8 {
        let grant = grant(&ids().next(), &application);
        store.insert_grant(&grant).await.unwrap();
        grants.push((grant, token(&application)));
    }
    let redemptions = grants.iter().map(|(grant, token)| {
        let store = store.clone();
        async move {
            store
                .redeem(&grant.code_id, at(100), issuing(token))
                .await
                .unwrap()
        }
    });
    let unknown = store.redeem("no-such-code", at(100), issuing(&token(&application)));
    let (outcomes, unknown) = futures_util::future::join(join_all(redemptions), unknown).await;
    assert_eq!(unknown.unwrap(), Redemption::Untouched);
    for ((grant, token), outcome) in grants.iter().zip(&outcomes) {
        assert_eq!(spent(outcome), Some(Some(token)), "{outcome:?}");
        let Redemption::Spent { found, .. } = outcome else {
            unreachable!()
        };
        assert_eq!(found.grant, *grant, "each exchange read its own grant");
        assert_eq!(
            store.find_token(&token.token_id).await.unwrap().as_ref(),
            Some(token)
        );
    }
}

pub async fn a_reused_code_revokes_its_token(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let grant = grant(&ids().next(), &application);
    store.insert_grant(&grant).await.unwrap();
    let first = token(&application);
    let outcome = store
        .redeem(&grant.code_id, at(100), issuing(&first))
        .await
        .unwrap();
    assert_eq!(spent(&outcome), Some(Some(&first)));
    let Redemption::Spent { found, .. } = outcome else {
        unreachable!()
    };
    assert_eq!(found.grant, grant, "the grant as it was read");
    let issued = store.find_token(&first.token_id).await.unwrap().unwrap();
    assert_eq!(issued, first);
    let again = token(&application);
    assert_eq!(
        store
            .redeem(&grant.code_id, at(200), issuing(&again))
            .await
            .unwrap(),
        Redemption::Reused
    );
    let revoked = store.find_token(&first.token_id).await.unwrap().unwrap();
    assert_eq!(revoked.revoked_at, Some(at(200)));
    assert_eq!(store.find_token(&again.token_id).await.unwrap(), None);
}

pub async fn a_failed_attempt_consumes_the_code(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let grant = grant(&ids().next(), &application);
    store.insert_grant(&grant).await.unwrap();
    let outcome = store
        .redeem(&grant.code_id, at(50), spending())
        .await
        .unwrap();
    assert_eq!(spent(&outcome), Some(None));
    let stored = read_grant(store.as_ref(), &grant.code_id)
        .await
        .unwrap()
        .grant;
    assert_eq!(stored.consumed_at, Some(at(50)));
    assert_eq!(stored.token_id, None);
    let late = token(&application);
    assert_eq!(
        store
            .redeem(&grant.code_id, at(60), issuing(&late))
            .await
            .unwrap(),
        Redemption::Reused
    );
    assert_eq!(store.find_token(&late.token_id).await.unwrap(), None);
}

pub async fn an_ignored_or_unknown_code_changes_nothing(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let grant = grant(&ids().next(), &application);
    store.insert_grant(&grant).await.unwrap();
    // `read_grant` redeems with an `Ignore` verdict and checks the outcome is `Untouched`.
    let seen = read_grant(store.as_ref(), &grant.code_id)
        .await
        .expect("decide saw the grant");
    assert_eq!(seen.grant, grant);
    let stored = read_grant(store.as_ref(), &grant.code_id).await.unwrap();
    assert_eq!(stored.grant, grant, "an ignored attempt spends nothing");

    let never: Decide = Box::new(|_| panic!("decide is not asked about a code nobody has"));
    assert_eq!(
        store
            .redeem(&random().hex(32), at(100), never)
            .await
            .unwrap(),
        Redemption::Untouched
    );
    // The code still works for its owner.
    let issued = token(&application);
    let outcome = store
        .redeem(&grant.code_id, at(110), issuing(&issued))
        .await
        .unwrap();
    assert_eq!(spent(&outcome), Some(Some(&issued)));
}

pub async fn only_the_owner_revokes_a_token(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let grant = grant(&ids().next(), &application);
    store.insert_grant(&grant).await.unwrap();
    let issued = token(&application);
    store
        .redeem(&grant.code_id, at(100), issuing(&issued))
        .await
        .unwrap();
    assert!(
        !store
            .revoke_token(&issued.token_id, &ids().next(), at(110))
            .await
            .unwrap()
    );
    assert!(
        store
            .revoke_token(&issued.token_id, &application, at(120))
            .await
            .unwrap()
    );
    assert!(
        !store
            .revoke_token(&issued.token_id, &application, at(130))
            .await
            .unwrap()
    );
    let stored = store.find_token(&issued.token_id).await.unwrap().unwrap();
    assert_eq!(stored.revoked_at, Some(at(120)));
}

pub async fn a_token_is_inserted_once_and_found(store: Arc<dyn OAuthRepository>) {
    let application: ApplicationId = ids().next();
    let issued = IssuedToken {
        claims: json!({"phone_number": {"value": "+15551234567", "verified": true, "verificationStatus": "verified"}}),
        scopes: vec!["openid".into(), "phone".into()],
        ..token(&application)
    };
    store.insert_token(&issued).await.unwrap();
    assert_eq!(
        store.find_token(&issued.token_id).await.unwrap(),
        Some(issued.clone())
    );
    let again = IssuedToken {
        subject: "someone else".into(),
        ..issued.clone()
    };
    assert!(matches!(
        store.insert_token(&again).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(
        store.find_token(&issued.token_id).await.unwrap(),
        Some(issued.clone())
    );
    assert!(
        store
            .revoke_token(&issued.token_id, &application, at(50))
            .await
            .unwrap()
    );
}
