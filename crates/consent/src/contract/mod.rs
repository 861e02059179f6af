//! The [`SessionRepository`] contract. Adapters run it through
//! `session_repository_contract!(make)`, `make` being an `async fn() -> Option<(Stores, G)>`
//! that gives the sessions port and the delivery store it writes the outbox into.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events::{CONSENT_APPROVED, CONSENT_CREATED, CONSENT_EXPIRED, CONSENT_REJECTED};
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_kernel::id::MerchantId;
use idconsent_kernel::id::{ApplicationId, ClientId, SessionId};
use idconsent_kernel::{Charge, Metric, QuotaExceeded, UsagePeriod};
use idconsent_kernel::{
    Currency, Environment, IdGenerator, Intent, Money, OsRandom, PageRequest, PhoneNumber,
    SystemClock, Timestamp, UlidGenerator,
};
use idconsent_webhook::{DeliveryStore, Effects, EventType, Outbox};
use serde_json::json;

mod flood_table;

pub use flood_table::flood_rules_follow_the_table;

use crate::model::{Session, SessionStatus, Transaction};
use crate::ports::{CreateError, CreateRefused, FloodLimits, SessionRepository, StoreError};

/// The ports a session store provides together.
#[derive(Debug, Clone)]
pub struct Stores {
    pub sessions: Arc<dyn SessionRepository>,
    /// Where the outbox entries written with sessions can be read back.
    pub deliveries: Arc<dyn DeliveryStore>,
}

#[macro_export]
macro_rules! session_repository_contract {
    ($make:path) => {
        $crate::session_repository_contract!(@cases $make;
            a_created_session_comes_back_with_its_event,
            a_create_over_its_quota_writes_nothing,
            a_decision_over_its_quota_writes_nothing,
            concurrent_charges_never_exceed_the_quota,
            pending_sessions_per_application_are_limited,
            expired_or_decided_sessions_do_not_count_as_pending,
            sessions_per_window_are_limited_across_applications,
            flood_rules_follow_the_table,
            limits_are_per_environment,
            concurrent_creates_never_exceed_the_limit,
            a_decision_is_recorded_once_with_its_event,
            of_concurrent_decisions_exactly_one_wins,
            a_session_cannot_be_decided_after_its_expiry,
            deciding_an_unknown_session_is_not_found,
            due_sessions_expire_once,
        );
    };
    (@cases $make:path; $($case:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                let Some((stores, _guard)) = $make().await else { return };
                $crate::contract::$case(stores).await;
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

const T0: i64 = 1_763_719_200_000;

fn at(offset_ms: i64) -> Timestamp {
    Timestamp::from_millis(T0 + offset_ms)
}

/// A fresh phone number per call, so cases never share a recipient.
fn phone() -> PhoneNumber {
    let random: Arc<dyn idconsent_kernel::RandomSource> = Arc::new(OsRandom);
    PhoneNumber::parse(&format!("+1555{}", random.digits(7))).unwrap()
}

fn session(
    application: &ApplicationId,
    environment: Environment,
    recipient: &PhoneNumber,
    created: Timestamp,
) -> Session {
    Session {
        id: ids().next::<SessionId>(),
        application_id: application.clone(),
        client_id: ids().next::<ClientId>(),
        environment,
        recipient: recipient.clone(),
        intent: Intent::Transaction,
        transaction: Transaction {
            kind: "payment".into(),
            description: "Order 42".into(),
            amount: Money::from_minor(1999, Currency::parse("EUR").unwrap()).unwrap(),
            payee: "Example Shop".into(),
        },
        callback_url: "https://shop.example/hooks".into(),
        status: SessionStatus::Pending,
        created_at: created,
        expires_at: created.plus(Duration::from_secs(300)),
        decided_at: None,
    }
}

fn outbox(session: &Session, event_type: EventType, now: Timestamp) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        event_type,
        session.application_id.clone(),
        session.environment,
        now,
        json!({"sessionId": session.id.as_str()}),
        &[&session.callback_url],
    )
}

fn limits() -> FloodLimits {
    FloodLimits {
        pending_per_application: 2,
        per_window: 3,
        window: Duration::from_secs(3600),
    }
}

async fn create(stores: &Stores, session: &Session, now: Timestamp) -> Result<(), CreateError> {
    let event = outbox(session, CONSENT_CREATED, now);
    stores
        .sessions
        .create(session, &Effects::events(vec![event]), &limits(), now)
        .await
}

async fn events_of(stores: &Stores, session: &Session) -> Vec<EventType> {
    let page = stores
        .deliveries
        .list(
            &session.application_id,
            session.environment,
            None,
            PageRequest::new(Some(1), Some(100)).unwrap(),
        )
        .await
        .unwrap();
    let mut types: Vec<(Timestamp, EventType)> = page
        .items
        .iter()
        .filter(|delivery| String::from_utf8_lossy(&delivery.body).contains(session.id.as_str()))
        .map(|delivery| (delivery.created_at, delivery.event_type.clone()))
        .collect();
    types.sort_by_key(|(created, _)| *created);
    types.into_iter().map(|(_, t)| t).collect()
}

pub async fn a_created_session_comes_back_with_its_event(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = session(&application, Environment::Sandbox, &phone(), at(0));
    create(&stores, &original, at(0)).await.unwrap();
    assert_eq!(
        stores.sessions.find(&original.id).await.unwrap(),
        Some(original.clone())
    );
    assert_eq!(events_of(&stores, &original).await, vec![CONSENT_CREATED]);
    assert!(stores.sessions.find(&ids().next()).await.unwrap().is_none());
}

pub async fn pending_sessions_per_application_are_limited(stores: Stores) {
    let application: ApplicationId = ids().next();
    let recipient = phone();
    let first = session(&application, Environment::Sandbox, &recipient, at(0));
    create(&stores, &first, at(0)).await.unwrap();
    create(
        &stores,
        &session(&application, Environment::Sandbox, &recipient, at(10)),
        at(10),
    )
    .await
    .unwrap();
    let third = session(&application, Environment::Sandbox, &recipient, at(20));
    match create(&stores, &third, at(20)).await {
        Err(CreateError::Refused(CreateRefused::TooManyPending { retry_at })) => {
            assert_eq!(
                retry_at, first.expires_at,
                "retry when the oldest pending one expires"
            );
        }
        other => panic!("expected TooManyPending, got {other:?}"),
    }
    assert!(
        stores.sessions.find(&third.id).await.unwrap().is_none(),
        "nothing written"
    );
    assert!(events_of(&stores, &third).await.is_empty());
    // Another application may still ask the same recipient.
    let other: ApplicationId = ids().next();
    create(
        &stores,
        &session(&other, Environment::Sandbox, &recipient, at(30)),
        at(30),
    )
    .await
    .unwrap();
}

pub async fn expired_or_decided_sessions_do_not_count_as_pending(stores: Stores) {
    let application: ApplicationId = ids().next();
    let recipient = phone();
    let decided = session(&application, Environment::Live, &recipient, at(0));
    create(&stores, &decided, at(0)).await.unwrap();
    stores
        .sessions
        .decide(
            &decided.id,
            SessionStatus::Approved,
            at(5),
            &Effects::default(),
        )
        .await
        .unwrap();
    let old = session(&application, Environment::Live, &recipient, at(1));
    create(&stores, &old, at(1)).await.unwrap();
    // `old` is past its expiry (not yet swept) by then: two more fit.
    let later = old.expires_at.plus(Duration::from_millis(1));
    let limits = FloodLimits {
        per_window: 100,
        ..limits()
    };
    for offset in 0..2 {
        let next = session(
            &application,
            Environment::Live,
            &recipient,
            later.plus(Duration::from_millis(offset)),
        );
        stores
            .sessions
            .create(&next, &Effects::default(), &limits, next.created_at)
            .await
            .unwrap();
    }
}

pub async fn sessions_per_window_are_limited_across_applications(stores: Stores) {
    let recipient = phone();
    let mut created = Vec::new();
    for i in 0..3 {
        let application: ApplicationId = ids().next();
        let next = session(&application, Environment::Sandbox, &recipient, at(i * 1000));
        create(&stores, &next, at(i * 1000)).await.unwrap();
        created.push(next);
    }
    let application: ApplicationId = ids().next();
    match create(
        &stores,
        &session(&application, Environment::Sandbox, &recipient, at(5000)),
        at(5000),
    )
    .await
    {
        Err(CreateError::Refused(CreateRefused::TooManyInWindow { retry_at })) => {
            assert_eq!(
                retry_at,
                at(3_600_000),
                "retry when the oldest leaves the window"
            );
        }
        other => panic!("expected TooManyInWindow, got {other:?}"),
    }
    // An hour after the first, one fits again.
    create(
        &stores,
        &session(
            &application,
            Environment::Sandbox,
            &recipient,
            at(3_600_001),
        ),
        at(3_600_001),
    )
    .await
    .unwrap();
}

pub async fn limits_are_per_environment(stores: Stores) {
    let application: ApplicationId = ids().next();
    let recipient = phone();
    for i in 0..2 {
        create(
            &stores,
            &session(&application, Environment::Sandbox, &recipient, at(i)),
            at(i),
        )
        .await
        .unwrap();
    }
    create(
        &stores,
        &session(&application, Environment::Live, &recipient, at(5)),
        at(5),
    )
    .await
    .unwrap();
}

pub async fn concurrent_creates_never_exceed_the_limit(stores: Stores) {
    let application: ApplicationId = ids().next();
    let recipient = phone();
    let attempts = (0..6).map(|i| {
        let stores = stores.clone();
        let next = session(&application, Environment::Sandbox, &recipient, at(i));
        async move { create(&stores, &next, at(10)).await }
    });
    let outcomes = join_all(attempts).await;
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
    assert_eq!(accepted, 2, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|o| matches!(o, Ok(()) | Err(CreateError::Refused(_))))
    );
}

pub async fn a_decision_is_recorded_once_with_its_event(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = session(&application, Environment::Sandbox, &phone(), at(0));
    create(&stores, &original, at(0)).await.unwrap();
    let approved = outbox(&original, CONSENT_APPROVED, at(100));
    stores
        .sessions
        .decide(
            &original.id,
            SessionStatus::Approved,
            at(100),
            &Effects::events(vec![approved]),
        )
        .await
        .unwrap();
    let stored = stores.sessions.find(&original.id).await.unwrap().unwrap();
    assert_eq!(stored.status, SessionStatus::Approved);
    assert_eq!(stored.decided_at, Some(at(100)));
    let rejected = outbox(&original, CONSENT_REJECTED, at(200));
    let again = stores
        .sessions
        .decide(
            &original.id,
            SessionStatus::Rejected,
            at(200),
            &Effects::events(vec![rejected]),
        )
        .await;
    assert!(matches!(again, Err(StoreError::NotPending)), "{again:?}");
    assert_eq!(
        events_of(&stores, &original).await,
        vec![CONSENT_CREATED, CONSENT_APPROVED],
        "the refused decision wrote no event"
    );
}

pub async fn of_concurrent_decisions_exactly_one_wins(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = session(&application, Environment::Sandbox, &phone(), at(0));
    create(&stores, &original, at(0)).await.unwrap();
    let decisions = (0..6).map(|i| {
        let stores = stores.clone();
        let original = original.clone();
        async move {
            let status = if i % 2 == 0 {
                SessionStatus::Approved
            } else {
                SessionStatus::Rejected
            };
            let event_type = if i % 2 == 0 {
                CONSENT_APPROVED
            } else {
                CONSENT_REJECTED
            };
            let event = outbox(&original, event_type, at(50));
            stores
                .sessions
                .decide(&original.id, status, at(50), &Effects::events(vec![event]))
                .await
        }
    });
    let outcomes = join_all(decisions).await;
    assert_eq!(
        outcomes.iter().filter(|o| o.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(events_of(&stores, &original).await.len(), 2);
}

pub async fn a_session_cannot_be_decided_after_its_expiry(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = session(&application, Environment::Sandbox, &phone(), at(0));
    create(&stores, &original, at(0)).await.unwrap();
    let late = stores
        .sessions
        .decide(
            &original.id,
            SessionStatus::Approved,
            original.expires_at,
            &Effects::default(),
        )
        .await;
    assert!(matches!(late, Err(StoreError::NotPending)), "{late:?}");
}

pub async fn deciding_an_unknown_session_is_not_found(stores: Stores) {
    let outcome = stores
        .sessions
        .decide(
            &ids().next(),
            SessionStatus::Approved,
            at(0),
            &Effects::default(),
        )
        .await;
    assert!(matches!(outcome, Err(StoreError::NotFound)), "{outcome:?}");
}

pub async fn due_sessions_expire_once(stores: Stores) {
    let application: ApplicationId = ids().next();
    let recipient = phone();
    let due = session(&application, Environment::Sandbox, &recipient, at(0));
    let fresh = session(&application, Environment::Sandbox, &recipient, at(200_000));
    create(&stores, &due, at(0)).await.unwrap();
    create(&stores, &fresh, at(200_000)).await.unwrap();
    let now = due.expires_at;
    let listed: Vec<SessionId> = stores
        .sessions
        .due_for_expiry(now, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert!(listed.contains(&due.id));
    assert!(!listed.contains(&fresh.id));
    // Two sweepers race: one expires it, with one event.
    let sweeps = (0..2).map(|_| {
        let stores = stores.clone();
        let due = due.clone();
        async move {
            let event = outbox(&due, CONSENT_EXPIRED, now);
            stores
                .sessions
                .expire(&due.id, due.expires_at, &[event])
                .await
                .unwrap()
        }
    });
    let outcomes = join_all(sweeps).await;
    assert_eq!(outcomes.iter().filter(|done| **done).count(), 1);
    let stored = stores.sessions.find(&due.id).await.unwrap().unwrap();
    assert_eq!(stored.status, SessionStatus::Expired);
    assert_eq!(stored.decided_at, Some(due.expires_at));
    assert_eq!(
        events_of(&stores, &due).await,
        vec![CONSENT_CREATED, CONSENT_EXPIRED]
    );
    assert!(
        !stores
            .sessions
            .due_for_expiry(now, 1000)
            .await
            .unwrap()
            .iter()
            .any(|s| s.id == due.id)
    );
}

fn charge(merchant: &MerchantId, metric: Metric, limit: u64) -> Charge {
    Charge {
        merchant_id: merchant.clone(),
        metric,
        period: UsagePeriod::of(at(0)),
        limit: Some(limit),
    }
}

pub async fn a_create_over_its_quota_writes_nothing(stores: Stores) {
    let merchant: MerchantId = ids().next();
    let application: ApplicationId = ids().next();
    let mut created = Vec::new();
    for n in 0..3 {
        let session = session(&application, Environment::Live, &phone(), at(n));
        let effects = Effects {
            outbox: vec![outbox(&session, CONSENT_CREATED, at(n))],
            charges: vec![charge(&merchant, Metric::Consents, 2)],
        };
        created.push((
            session.clone(),
            stores
                .sessions
                .create(&session, &effects, &limits(), at(n))
                .await,
        ));
    }
    assert!(created[0].1.is_ok() && created[1].1.is_ok(), "{created:?}");
    let (refused, outcome) = &created[2];
    assert!(
        matches!(
            outcome,
            Err(CreateError::Quota(QuotaExceeded {
                metric: Metric::Consents,
                ..
            }))
        ),
        "{outcome:?}"
    );
    assert_eq!(stores.sessions.find(&refused.id).await.unwrap(), None);
    assert!(events_of(&stores, refused).await.is_empty());
    // Another merchant's quota is its own.
    let other = session(&application, Environment::Live, &phone(), at(5));
    let effects = Effects {
        outbox: Vec::new(),
        charges: vec![charge(&ids().next(), Metric::Consents, 2)],
    };
    stores
        .sessions
        .create(&other, &effects, &limits(), at(5))
        .await
        .unwrap();
}

pub async fn a_decision_over_its_quota_writes_nothing(stores: Stores) {
    let merchant: MerchantId = ids().next();
    let application: ApplicationId = ids().next();
    let first = session(&application, Environment::Live, &phone(), at(0));
    let second = session(&application, Environment::Live, &phone(), at(0));
    create(&stores, &first, at(0)).await.unwrap();
    create(&stores, &second, at(0)).await.unwrap();
    let approving = |session: &Session| Effects {
        outbox: vec![outbox(session, CONSENT_APPROVED, at(1))],
        charges: vec![charge(&merchant, Metric::Authentications, 1)],
    };
    stores
        .sessions
        .decide(
            &first.id,
            SessionStatus::Approved,
            at(1),
            &approving(&first),
        )
        .await
        .unwrap();
    let refused = stores
        .sessions
        .decide(
            &second.id,
            SessionStatus::Approved,
            at(1),
            &approving(&second),
        )
        .await;
    assert!(matches!(refused, Err(StoreError::Quota(_))), "{refused:?}");
    let unchanged = stores.sessions.find(&second.id).await.unwrap().unwrap();
    assert_eq!(unchanged.status, SessionStatus::Pending);
    assert_eq!(events_of(&stores, &second).await, vec![CONSENT_CREATED]);
}

pub async fn concurrent_charges_never_exceed_the_quota(stores: Stores) {
    let merchant: MerchantId = ids().next();
    let application: ApplicationId = ids().next();
    let attempts = (0..12).map(|_| {
        let stores = stores.clone();
        let merchant = merchant.clone();
        let application = application.clone();
        async move {
            // A fresh recipient each, so only the quota can refuse.
            let session = session(&application, Environment::Live, &phone(), at(0));
            let effects = Effects {
                outbox: Vec::new(),
                charges: vec![charge(&merchant, Metric::Consents, 5)],
            };
            stores
                .sessions
                .create(&session, &effects, &limits(), at(0))
                .await
        }
    });
    let outcomes = join_all(attempts).await;
    let created = outcomes.iter().filter(|o| o.is_ok()).count();
    let refused = outcomes
        .iter()
        .filter(|o| matches!(o, Err(CreateError::Quota(_))))
        .count();
    assert_eq!((created, refused), (5, 7), "{outcomes:?}");
}
