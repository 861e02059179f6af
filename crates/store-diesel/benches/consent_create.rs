//! Creating a consent session through the consent domain on SQLite: validation, the flood
//! counts, the session row and its `consent.created` outbox (event and delivery) in one write
//! transaction, as `POST /v1/consents/auth` does after the signature check.
//!
//! `cargo bench -p idconsent-store-diesel --bench consent_create`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use idconsent_consent::events::CONSENT_CREATED;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use idconsent_consent::events::{ConsentEventData, NothingAdded, SessionData};
use idconsent_consent::ports::{FloodLimits, SessionRepository};
use idconsent_consent::testing::TextQr;
use idconsent_consent::{
    ConsentPorts, ConsentService, ConsentSettings, CreateRequest, RecipientDirectory, Requester,
    StoreError, TransactionInput,
};
use idconsent_kernel::id::{ApplicationId, ClientId, IdGenerator};
use idconsent_kernel::{
    Clock, Environment, Intent, OsRandom, PhoneNumber, SystemClock, UlidGenerator,
};
use idconsent_store_diesel::DieselSessionStore;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_webhook::Outbox;

/// Sandbox creates never ask (only live recipients must be enrolled).
#[derive(Debug)]
struct NobodyEnrolled;

#[async_trait]
impl RecipientDirectory for NobodyEnrolled {
    async fn is_enrolled(&self, _: &PhoneNumber) -> Result<bool, StoreError> {
        Ok(false)
    }
}

fn request(client_id: &str, n: u64) -> CreateRequest {
    CreateRequest {
        client_id: client_id.to_owned(),
        // A new recipient each time: the flood limits (5 pending, 30 an hour) never bite.
        recipient: format!("+1555{n:09}"),
        intent: "LOGIN".into(),
        callback_url: "https://merchant.example/hooks/consent".into(),
        transaction: TransactionInput {
            kind: "login".into(),
            description: "Sign in to Example Shop".into(),
            amount: "0".into(),
            currency: "USD".into(),
            payee: "Example Shop".into(),
        },
    }
}

fn consent_create(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let database = TestDatabase::sqlite();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(clock.clone(), Arc::new(OsRandom)));
    let store = Arc::new(DieselSessionStore::new(database.db.clone()));
    // The QR code is drawn by a text double: this bench measures the store's share.
    let service = ConsentService::new(
        ConsentPorts {
            sessions: store.clone(),
            recipients: Arc::new(NobodyEnrolled),
            metering: Arc::new(idconsent_kernel::Unmetered),
            clock: clock.clone(),
            ids: ids.clone(),
            outbox_written: None,
            qr: Arc::new(TextQr),
        },
        ConsentSettings::default(),
    );
    let application_id: ApplicationId = ids.next();
    let client_id: ClientId = ids.next();
    let requester = Requester {
        application_id,
        client_id: client_id.clone(),
        environment: Environment::Sandbox,
        allowed_intents: vec![Intent::Login],
    };

    let mut group = c.benchmark_group("consent_create");
    group.measurement_time(Duration::from_secs(8));
    let mut n = 0u64;
    group.bench_function("ConsentService::create (sqlite)", |b| {
        b.iter(|| {
            n += 1;
            runtime
                .block_on(service.create(&requester, request(client_id.as_str(), n)))
                .unwrap()
        })
    });

    // The store's share: the same write transaction (session, event, delivery), with the
    // session and its outbox built in the unmeasured setup.
    let template = runtime
        .block_on(service.create(&requester, request(client_id.as_str(), 0)))
        .unwrap()
        .session;
    let limits = FloodLimits::default();
    group.bench_function("DieselSessionStore::create only (sqlite)", |b| {
        b.iter_batched(
            || {
                n += 1;
                let now = clock.now();
                let mut session = template.clone();
                session.id = ids.next();
                session.recipient = PhoneNumber::parse(&format!("+1666{n:09}")).unwrap();
                let outbox = Outbox::new(
                    ids.as_ref(),
                    CONSENT_CREATED,
                    session.application_id.clone(),
                    session.environment,
                    now,
                    ConsentEventData {
                        session: SessionData::of(&session, now),
                        added: &NothingAdded {},
                    },
                    &[&session.callback_url],
                );
                (session, outbox, now)
            },
            |(session, outbox, now)| {
                runtime
                    .block_on(store.create(
                        &session,
                        &idconsent_webhook::Effects::events(vec![outbox]),
                        &limits,
                        now,
                    ))
                    .unwrap()
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

criterion_group!(benches, consent_create);
criterion_main!(benches);
