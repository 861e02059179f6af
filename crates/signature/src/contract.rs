//! The [`SignatureRepository`] contract. Adapters run it through
//! `signature_repository_contract!(make)`, `make` being an `async fn() -> Option<(Stores, G)>`
//! that gives the repository and the delivery store it writes the outbox into.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events::SIGNATURE_COMPLETED;
use std::sync::Arc;

use futures_util::future::join_all;
use idconsent_kernel::id::{ApplicationId, SignatureRequestId};
use idconsent_kernel::{
    EmailAddress, Environment, IdGenerator, OsRandom, PageRequest, SystemClock, Timestamp,
    UlidGenerator,
};
use idconsent_webhook::{DeliveryStore, Effects, EventType, Outbox};

use crate::model::{
    Evidence, RequestStatus, SignatureRequest, Signer, SignerStatus, TransitionError,
};
use crate::ports::{SignatureRepository, StoreError};

/// The ports a signature store provides together.
#[derive(Debug, Clone)]
pub struct Stores {
    pub requests: Arc<dyn SignatureRepository>,
    /// Where the outbox entries written with requests can be read back.
    pub deliveries: Arc<dyn DeliveryStore>,
}

#[macro_export]
macro_rules! signature_repository_contract {
    ($make:path) => {
        $crate::signature_repository_contract!(@cases $make;
            a_created_request_comes_back_whole,
            a_duplicate_id_is_refused,
            a_replace_from_the_loaded_version_is_stored_with_its_events,
            a_replace_from_a_stale_version_writes_nothing,
            of_concurrent_replaces_exactly_one_wins,
            due_requests_are_pending_and_past_their_expiry,
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

fn email(text: &str) -> EmailAddress {
    EmailAddress::parse(text).unwrap()
}

/// A pending request with two signers, one with a name outside Latin-1.
fn request(application: &ApplicationId, expires_at: Timestamp) -> SignatureRequest {
    let signer = |address: &str, name: &str| Signer {
        email: email(address),
        name: name.into(),
        status: SignerStatus::AwaitingSignature,
        decided_at: None,
        ip_address: None,
        biometric_verified: false,
    };
    let mut request = SignatureRequest {
        id: ids().next(),
        application_id: application.clone(),
        environment: Environment::Sandbox,
        document_sha256: "0f".repeat(32),
        document_size: 12_345,
        document_pages: 3,
        signers: vec![
            signer("ann@example.com", "Ann Lee"),
            signer("zoe@example.com", "Зоя Łukasz 山田"),
        ],
        callback_url: Some("https://shop.example/hooks".into()),
        require_biometric: true,
        status: RequestStatus::Pending,
        created_at: at(0),
        expires_at,
        completed_at: None,
        audit: Vec::new(),
        version: 0,
    };
    request.record_creation();
    request
}

fn passkey() -> Evidence {
    Evidence {
        ip_address: Some("203.0.113.7".into()),
        user_agent: Some("Mozilla/5.0 (iPhone)".into()),
        email_code_verified: true,
        biometric_verified: true,
        sandbox: false,
    }
}

fn completed_event(request: &SignatureRequest) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        SIGNATURE_COMPLETED,
        request.application_id.clone(),
        request.environment,
        at(1),
        serde_json::json!({ "signatureRequestId": request.id }),
        &["https://shop.example/hooks"],
    )
}

async fn events_of(stores: &Stores, request: &SignatureRequest) -> Vec<EventType> {
    let page = stores
        .deliveries
        .list(
            &request.application_id,
            request.environment,
            None,
            PageRequest::new(Some(1), Some(100)).unwrap(),
        )
        .await
        .unwrap();
    page.items
        .iter()
        .filter(|delivery| String::from_utf8_lossy(&delivery.body).contains(request.id.as_str()))
        .map(|delivery| delivery.event_type.clone())
        .collect()
}

pub async fn a_created_request_comes_back_whole(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = request(&application, at(3_600_000));
    stores
        .requests
        .create(&original, &Effects::default())
        .await
        .unwrap();
    assert_eq!(
        stores.requests.find(&original.id).await.unwrap(),
        Some(original.clone())
    );
    let unknown: SignatureRequestId = ids().next();
    assert!(stores.requests.find(&unknown).await.unwrap().is_none());
}

pub async fn a_duplicate_id_is_refused(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = request(&application, at(3_600_000));
    stores
        .requests
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut again = original.clone();
    again.document_pages = 9;
    assert!(matches!(
        stores.requests.create(&again, &Effects::default()).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(
        stores.requests.find(&original.id).await.unwrap(),
        Some(original)
    );
}

pub async fn a_replace_from_the_loaded_version_is_stored_with_its_events(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = request(&application, at(3_600_000));
    stores
        .requests
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut signed = original.clone();
    assert!(
        !signed
            .sign(&email("ann@example.com"), &passkey(), at(1))
            .unwrap()
    );
    assert!(
        stores
            .requests
            .replace(&signed, original.version, &Effects::default())
            .await
            .unwrap()
    );
    let mut completed = signed.clone();
    assert!(
        completed
            .sign(&email("zoe@example.com"), &passkey(), at(2))
            .unwrap()
    );
    let effects = Effects::events(vec![completed_event(&completed)]);
    assert!(
        stores
            .requests
            .replace(&completed, signed.version, &effects)
            .await
            .unwrap()
    );
    let stored = stores.requests.find(&original.id).await.unwrap().unwrap();
    assert_eq!(stored, completed);
    assert_eq!(stored.status, RequestStatus::Completed);
    assert_eq!(
        events_of(&stores, &original).await,
        vec![SIGNATURE_COMPLETED]
    );
}

pub async fn a_replace_from_a_stale_version_writes_nothing(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = request(&application, at(3_600_000));
    stores
        .requests
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut first = original.clone();
    first
        .sign(&email("ann@example.com"), &passkey(), at(1))
        .unwrap();
    assert!(
        stores
            .requests
            .replace(&first, original.version, &Effects::default())
            .await
            .unwrap()
    );
    // Computed from the version before `first`: storing it would erase Ann's signature.
    let mut stale = original.clone();
    stale
        .decline(&email("zoe@example.com"), &passkey(), at(2))
        .unwrap();
    let effects = Effects::events(vec![completed_event(&stale)]);
    assert!(
        !stores
            .requests
            .replace(&stale, original.version, &effects)
            .await
            .unwrap()
    );
    assert_eq!(
        stores.requests.find(&original.id).await.unwrap(),
        Some(first)
    );
    assert!(events_of(&stores, &original).await.is_empty());
}

pub async fn of_concurrent_replaces_exactly_one_wins(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = request(&application, at(3_600_000));
    stores
        .requests
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let attempts = (0..6).map(|n| {
        let stores = stores.clone();
        let mut next = original.clone();
        async move {
            let who = if n % 2 == 0 {
                "ann@example.com"
            } else {
                "zoe@example.com"
            };
            next.sign(&email(who), &passkey(), at(n)).unwrap();
            let effects = Effects::events(vec![completed_event(&next)]);
            stores
                .requests
                .replace(&next, original.version, &effects)
                .await
                .unwrap()
        }
    });
    let won = join_all(attempts)
        .await
        .into_iter()
        .filter(|won| *won)
        .count();
    assert_eq!(won, 1);
    let stored = stores.requests.find(&original.id).await.unwrap().unwrap();
    assert_eq!(stored.version, original.version + 1);
    assert_eq!(events_of(&stores, &original).await.len(), 1);
}

pub async fn due_requests_are_pending_and_past_their_expiry(stores: Stores) {
    let application: ApplicationId = ids().next();
    let due = request(&application, at(-10));
    let later = request(&application, at(3_600_000));
    let mut declined = request(&application, at(-5));
    for created in [&due, &later, &declined] {
        stores
            .requests
            .create(created, &Effects::default())
            .await
            .unwrap();
    }
    let loaded_version = declined.version;
    let mut answered = declined.clone();
    answered.expires_at = at(3_600_000);
    // Declining is judged against the stored expiry by the service; here only the status counts.
    assert_eq!(
        answered.decline(&email("ann@example.com"), &passkey(), at(0)),
        Ok(())
    );
    declined.status = answered.status;
    declined.signers = answered.signers;
    declined.audit = answered.audit;
    declined.version = answered.version;
    assert!(
        stores
            .requests
            .replace(&declined, loaded_version, &Effects::default())
            .await
            .unwrap()
    );
    let listed: Vec<SignatureRequestId> = stores
        .requests
        .due_for_expiry(at(0), 1000)
        .await
        .unwrap()
        .into_iter()
        .filter(|request| request.application_id == application)
        .map(|request| request.id)
        .collect();
    assert_eq!(listed, vec![due.id.clone()]);

    let mut expired = due.clone();
    expired.expire(at(0)).unwrap();
    assert!(
        stores
            .requests
            .replace(&expired, due.version, &Effects::default())
            .await
            .unwrap()
    );
    let mut again = due.clone();
    again.expire(at(1)).unwrap();
    assert!(
        !stores
            .requests
            .replace(&again, due.version, &Effects::default())
            .await
            .unwrap(),
        "a second sweeper finds the request already expired"
    );
    assert_eq!(
        expired.clone().expire(at(2)),
        Err(TransitionError::NotPending(RequestStatus::Expired))
    );
    assert!(
        stores
            .requests
            .due_for_expiry(at(0), 1000)
            .await
            .unwrap()
            .iter()
            .all(|request| request.application_id != application)
    );
}
