//! The [`MandateRepository`] contract. Adapters run it through
//! `mandate_repository_contract!(make)`, `make` being an `async fn() -> Option<(Stores, G)>`
//! that gives the repository and the delivery store it writes the outbox into.

// Test support: a failed expectation is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::events::MANDATE_SIGNED;
use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_approval::Recipient;
use idconsent_kernel::id::{ApplicationId, MerchantId};
use idconsent_kernel::{
    Charge, Currency, EmailAddress, Environment, IdGenerator, Metric, Money, OsRandom, PageRequest,
    PhoneNumber, SystemClock, Timestamp, UlidGenerator, UsagePeriod,
};
use idconsent_webhook::{DeliveryStore, Effects, EventType, Outbox};

use crate::model::{AUTHORIZATION_WINDOW, Frequency, Mandate, MandateStatus, MandateType, Terms};
use crate::ports::{MandateQuery, MandateRepository, StoreError};

/// The ports a mandate store provides together.
#[derive(Debug, Clone)]
pub struct Stores {
    pub mandates: Arc<dyn MandateRepository>,
    /// Where the outbox entries written with mandates can be read back.
    pub deliveries: Arc<dyn DeliveryStore>,
}

#[macro_export]
macro_rules! mandate_repository_contract {
    ($make:path) => {
        $crate::mandate_repository_contract!(@cases $make;
            a_created_mandate_comes_back_whole,
            a_duplicate_id_is_refused,
            a_charge_over_its_quota_writes_nothing,
            a_replace_from_the_loaded_version_is_stored_with_its_events,
            a_replace_from_a_stale_version_writes_nothing,
            of_concurrent_replaces_exactly_one_wins,
            lists_filter_by_status_as_of_now_and_type_newest_first,
            lists_show_one_application_and_environment_only,
            due_mandates_are_pending_and_past_their_deadline,
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

fn usd() -> Currency {
    Currency::parse("USD").unwrap()
}

/// A pending mandate created at `created`, to a phone, with every optional term set.
fn mandate(application: &ApplicationId, created: Timestamp) -> Mandate {
    Mandate {
        id: ids().next(),
        application_id: application.clone(),
        environment: Environment::Sandbox,
        recipient: Recipient::Phone(PhoneNumber::parse("+15551234567").unwrap()),
        kind: MandateType::DirectDebit,
        terms: Terms {
            amount: Some(Money::from_minor(12_345, usd()).unwrap()),
            currency: usd(),
            frequency: Some(Frequency::Monthly),
        },
        description: "Électricité — contrat n° 42".into(),
        callback_url: Some("https://shop.example/hooks".into()),
        status: MandateStatus::PendingAuthorization,
        authorized_terms: None,
        created_at: created,
        updated_at: created,
        authorization_deadline: Some(created.plus(AUTHORIZATION_WINDOW)),
        authorized_at: None,
        cancelled_at: None,
        version: 0,
    }
}

fn signed_event(mandate: &Mandate) -> Outbox {
    Outbox::new(
        ids().as_ref(),
        MANDATE_SIGNED,
        mandate.application_id.clone(),
        mandate.environment,
        at(1),
        serde_json::json!({ "id": mandate.id }),
        &["https://shop.example/hooks"],
    )
}

async fn events_of(stores: &Stores, mandate: &Mandate) -> Vec<EventType> {
    let page = stores
        .deliveries
        .list(
            &mandate.application_id,
            mandate.environment,
            None,
            PageRequest::new(Some(1), Some(100)).unwrap(),
        )
        .await
        .unwrap();
    page.items
        .iter()
        .filter(|delivery| String::from_utf8_lossy(&delivery.body).contains(mandate.id.as_str()))
        .map(|delivery| delivery.event_type.clone())
        .collect()
}

pub async fn a_created_mandate_comes_back_whole(stores: Stores) {
    let application: ApplicationId = ids().next();
    let by_phone = mandate(&application, at(0));
    let mut by_email = mandate(&application, at(1));
    by_email.recipient = Recipient::Email(EmailAddress::parse("ann@example.com").unwrap());
    by_email.terms = Terms {
        amount: None,
        currency: Currency::parse("JPY").unwrap(),
        frequency: None,
    };
    by_email.callback_url = None;
    for original in [by_phone, by_email] {
        stores
            .mandates
            .create(&original, &Effects::default())
            .await
            .unwrap();
        let stored = stores.mandates.find(&original.id).await.unwrap();
        assert_eq!(stored, Some(original));
    }
    assert_eq!(stores.mandates.find(&ids().next()).await.unwrap(), None);
}

pub async fn a_duplicate_id_is_refused(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = mandate(&application, at(0));
    stores
        .mandates
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut again = original.clone();
    again.description = "another".into();
    assert!(matches!(
        stores.mandates.create(&again, &Effects::default()).await,
        Err(StoreError::Duplicate)
    ));
    assert_eq!(
        stores.mandates.find(&original.id).await.unwrap(),
        Some(original)
    );
}

pub async fn a_charge_over_its_quota_writes_nothing(stores: Stores) {
    let application: ApplicationId = ids().next();
    let merchant: MerchantId = ids().next();
    let charge = |limit| Charge {
        merchant_id: merchant.clone(),
        metric: Metric::Mandates,
        period: UsagePeriod::of(at(0)),
        limit: Some(limit),
    };
    let first = mandate(&application, at(0));
    let effects = Effects {
        outbox: Vec::new(),
        charges: vec![charge(1)],
    };
    stores.mandates.create(&first, &effects).await.unwrap();
    let second = mandate(&application, at(1));
    assert!(matches!(
        stores.mandates.create(&second, &effects).await,
        Err(StoreError::Quota(quota)) if quota.metric == Metric::Mandates
    ));
    assert_eq!(stores.mandates.find(&second.id).await.unwrap(), None);
}

pub async fn a_replace_from_the_loaded_version_is_stored_with_its_events(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = mandate(&application, at(0));
    stores
        .mandates
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut active = original.clone();
    active.approve(at(1)).unwrap();
    let effects = Effects::events(vec![signed_event(&active)]);
    assert!(
        stores
            .mandates
            .replace(&active, original.version, &effects)
            .await
            .unwrap()
    );
    let stored = stores.mandates.find(&original.id).await.unwrap().unwrap();
    assert_eq!(stored, active);
    assert_eq!(stored.status, MandateStatus::Active);
    assert_eq!(events_of(&stores, &original).await, vec![MANDATE_SIGNED]);

    // A re-authorisation keeps the authorised terms next to the new ones.
    let mut raised = stored.clone();
    raised.terms.amount = Some(Money::from_minor(99_999, usd()).unwrap());
    raised.authorized_terms = Some(stored.terms);
    raised.status = MandateStatus::PendingAuthorization;
    raised.authorization_deadline = Some(at(2).plus(AUTHORIZATION_WINDOW));
    raised.version += 1;
    assert!(
        stores
            .mandates
            .replace(&raised, stored.version, &Effects::default())
            .await
            .unwrap()
    );
    assert_eq!(
        stores.mandates.find(&original.id).await.unwrap(),
        Some(raised)
    );
}

pub async fn a_replace_from_a_stale_version_writes_nothing(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = mandate(&application, at(0));
    stores
        .mandates
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let mut cancelled = original.clone();
    cancelled.cancel(at(1)).unwrap();
    assert!(
        stores
            .mandates
            .replace(&cancelled, original.version, &Effects::default())
            .await
            .unwrap()
    );
    // Computed from the version before the cancellation: storing it would revive the mandate.
    let mut stale = original.clone();
    stale.approve(at(2)).unwrap();
    let effects = Effects::events(vec![signed_event(&stale)]);
    assert!(
        !stores
            .mandates
            .replace(&stale, original.version, &effects)
            .await
            .unwrap()
    );
    assert_eq!(
        stores.mandates.find(&original.id).await.unwrap(),
        Some(cancelled)
    );
    assert!(events_of(&stores, &original).await.is_empty());
}

pub async fn of_concurrent_replaces_exactly_one_wins(stores: Stores) {
    let application: ApplicationId = ids().next();
    let original = mandate(&application, at(0));
    stores
        .mandates
        .create(&original, &Effects::default())
        .await
        .unwrap();
    let attempts = (0..10).map(|n| {
        let stores = stores.clone();
        let mut next = original.clone();
        async move {
            next.approve(at(1 + n)).unwrap();
            let effects = Effects::events(vec![signed_event(&next)]);
            stores
                .mandates
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
    assert_eq!(events_of(&stores, &original).await, vec![MANDATE_SIGNED]);
}

pub async fn lists_filter_by_status_as_of_now_and_type_newest_first(stores: Stores) {
    let application: ApplicationId = ids().next();
    let hour = |n: i64| at(n * 3_600_000);
    let pending = mandate(&application, hour(3));
    let mut active = mandate(&application, hour(2));
    active.kind = MandateType::StandingOrder;
    active.approve(hour(2)).unwrap();
    let mut cancelled = mandate(&application, hour(1));
    cancelled.cancel(hour(1)).unwrap();
    // Pending, but its deadline passes before `now`: it reads (and lists) as expired.
    let lapsed = mandate(&application, hour(-200));
    for mandate in [&pending, &active, &cancelled, &lapsed] {
        stores
            .mandates
            .create(mandate, &Effects::default())
            .await
            .unwrap();
    }
    let list = |status, kind| {
        let stores = stores.clone();
        let query = MandateQuery {
            application_id: application.clone(),
            environment: Environment::Sandbox,
            status,
            kind,
            now: hour(4),
        };
        async move {
            let page = stores
                .mandates
                .list(&query, PageRequest::default())
                .await
                .unwrap();
            let ids: Vec<String> = page.items.iter().map(|m| m.id.to_string()).collect();
            (ids, page.total)
        }
    };
    let id = |mandate: &Mandate| mandate.id.to_string();
    assert_eq!(
        list(None, None).await,
        (
            vec![id(&pending), id(&active), id(&cancelled), id(&lapsed)],
            4
        )
    );
    assert_eq!(
        list(Some(MandateStatus::PendingAuthorization), None).await,
        (vec![id(&pending)], 1)
    );
    assert_eq!(
        list(Some(MandateStatus::Expired), None).await,
        (vec![id(&lapsed)], 1)
    );
    assert_eq!(
        list(Some(MandateStatus::Active), None).await,
        (vec![id(&active)], 1)
    );
    assert_eq!(
        list(Some(MandateStatus::Cancelled), None).await,
        (vec![id(&cancelled)], 1)
    );
    assert_eq!(
        list(None, Some(MandateType::StandingOrder)).await,
        (vec![id(&active)], 1)
    );
    assert_eq!(
        list(Some(MandateStatus::Active), Some(MandateType::DirectDebit)).await,
        (vec![], 0)
    );

    // Pages: newest first, the total counts every match.
    let query = MandateQuery {
        application_id: application.clone(),
        environment: Environment::Sandbox,
        status: None,
        kind: None,
        now: hour(4),
    };
    let second = stores
        .mandates
        .list(&query, PageRequest::new(Some(2), Some(3)).unwrap())
        .await
        .unwrap();
    assert_eq!(second.total, 4);
    assert_eq!(
        second.items.iter().map(id).collect::<Vec<_>>(),
        vec![id(&lapsed)]
    );
}

pub async fn lists_show_one_application_and_environment_only(stores: Stores) {
    let application: ApplicationId = ids().next();
    let other: ApplicationId = ids().next();
    let mine = mandate(&application, at(0));
    let theirs = mandate(&other, at(0));
    let mut live = mandate(&application, at(0));
    live.environment = Environment::Live;
    for mandate in [&mine, &theirs, &live] {
        stores
            .mandates
            .create(mandate, &Effects::default())
            .await
            .unwrap();
    }
    for (environment, expected) in [(Environment::Sandbox, &mine), (Environment::Live, &live)] {
        let query = MandateQuery {
            application_id: application.clone(),
            environment,
            status: None,
            kind: None,
            now: at(1),
        };
        let page = stores
            .mandates
            .list(&query, PageRequest::default())
            .await
            .unwrap();
        assert_eq!(page.items, vec![expected.clone()]);
        assert_eq!(page.total, 1);
    }
}

pub async fn due_mandates_are_pending_and_past_their_deadline(stores: Stores) {
    let application: ApplicationId = ids().next();
    let now = at(0).plus(AUTHORIZATION_WINDOW);
    let due_first = mandate(&application, at(-2_000));
    let due_second = mandate(&application, at(-1_000));
    let due_now = mandate(&application, at(0));
    let not_yet = mandate(&application, at(1));
    let mut cancelled = mandate(&application, at(-3_000));
    cancelled.cancel(at(-2_999)).unwrap();
    for mandate in [&due_second, &not_yet, &due_now, &cancelled, &due_first] {
        stores
            .mandates
            .create(mandate, &Effects::default())
            .await
            .unwrap();
    }
    let due = stores.mandates.due_for_expiry(now, 10).await.unwrap();
    let mine: Vec<_> = due
        .iter()
        .filter(|m| m.application_id == application)
        .map(|m| m.id.clone())
        .collect();
    assert_eq!(mine, vec![due_first.id, due_second.id, due_now.id]);
    assert!(
        stores
            .mandates
            .due_for_expiry(now.minus(Duration::from_secs(3_600)), 10)
            .await
            .unwrap()
            .iter()
            .all(|m| m.application_id != application)
    );
}
