use idconsent_consent::events::CONSENT_CREATED;
use std::sync::Arc;

use idconsent_consent::contract::Stores;
use idconsent_store_diesel::testing::TestDatabase;
use idconsent_store_diesel::{DieselDeliveryStore, DieselSessionStore};

fn stores_on(database: TestDatabase) -> (Stores, TestDatabase) {
    let stores = Stores {
        sessions: Arc::new(DieselSessionStore::new(database.db.clone())),
        deliveries: Arc::new(DieselDeliveryStore::new(database.db.clone())),
    };
    (stores, database)
}

contract_on_both_backends!(
    idconsent_consent::session_repository_contract,
    stores: (Stores, TestDatabase) = stores_on
);

/// Two processes on one PostgreSQL database each batch their creates (ADR 0035). Their batches
/// take recipients' locks in one order, so they never deadlock however their recipients
/// interleave, and the flood limit and the merchant's quota hold across both.
#[tokio::test]
async fn two_processes_batches_share_the_limits_and_never_deadlock() {
    use std::time::Duration;

    use diesel::connection::SimpleConnection;
    use diesel::sql_types::BigInt;
    use diesel::{Connection, PgConnection, RunQueryDsl};
    use idconsent_consent::ports::CreateError;
    use idconsent_consent::{FloodLimits, Session, SessionRepository, SessionStatus, Transaction};
    use idconsent_kernel::id::{ApplicationId, ClientId, MerchantId, SessionId};
    use idconsent_kernel::{
        Charge, Currency, Environment, IdGenerator, Intent, Metric, Money, OsRandom, PhoneNumber,
        SystemClock, Timestamp, UlidGenerator, UsagePeriod,
    };
    use idconsent_store_diesel::{Db, DbOptions};
    use idconsent_webhook::{Effects, Outbox};

    let Some(database) = TestDatabase::postgres() else {
        return;
    };
    let second = Db::open(&database.url, &DbOptions::default()).unwrap();
    let processes = [
        DieselSessionStore::new(database.db.clone()),
        DieselSessionStore::new(second),
    ];
    let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(
        Arc::new(SystemClock),
        Arc::new(OsRandom),
    ));
    let now = Timestamp::from_millis(1_763_719_200_000);
    let application: ApplicationId = ids.next();
    let merchant: MerchantId = ids.next();
    let random: Arc<dyn idconsent_kernel::RandomSource> = Arc::new(OsRandom);
    let recipients: Vec<PhoneNumber> = (0..6)
        .map(|_| PhoneNumber::parse(&format!("+1555{}", random.digits(7))).unwrap())
        .collect();
    // A third connection holds one recipient's lock until both processes' batches wait — for
    // it, or for a lock the other batch holds — so that they surely overlap.
    let held = format!("consent:live:{}", recipients[3].as_str());
    let mut holder = PgConnection::establish(&database.url).unwrap();
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{held}'))"
        ))
        .unwrap();
    // 6 recipients × 3 pending would admit 18; the quota of 10 admits 10.
    let limits = FloodLimits {
        pending_per_application: 3,
        per_window: 100,
        window: Duration::from_secs(3600),
    };
    let mut creates = tokio::task::JoinSet::new();
    for n in 0..120_usize {
        let process = processes[n % 2].clone();
        // The two processes walk the recipients in opposite orders.
        let turn = (n / 2) % recipients.len();
        let recipient = if n % 2 == 0 {
            recipients[turn].clone()
        } else {
            recipients[recipients.len() - 1 - turn].clone()
        };
        let session = Session {
            id: ids.next::<SessionId>(),
            application_id: application.clone(),
            client_id: ids.next::<ClientId>(),
            environment: Environment::Live,
            recipient,
            intent: Intent::Login,
            transaction: Transaction {
                kind: "login".into(),
                description: "Sign in".into(),
                amount: Money::from_minor(0, Currency::parse("EUR").unwrap()).unwrap(),
                payee: "Example Shop".into(),
            },
            callback_url: "https://shop.example/hooks".into(),
            status: SessionStatus::Pending,
            created_at: now,
            expires_at: now.plus(Duration::from_secs(300)),
            decided_at: None,
        };
        let effects = Effects {
            outbox: vec![Outbox::new(
                ids.as_ref(),
                CONSENT_CREATED,
                application.clone(),
                Environment::Live,
                now,
                serde_json::json!({"sessionId": session.id.as_str()}),
                &[&session.callback_url],
            )],
            charges: vec![Charge {
                merchant_id: merchant.clone(),
                metric: Metric::Consents,
                period: UsagePeriod::of(now),
                limit: Some(10),
            }],
        };
        creates.spawn(async move {
            let outcome = process.create(&session, &effects, &limits, now).await;
            (session.id, outcome)
        });
    }
    let waiting_for_held = tokio::task::spawn_blocking({
        let url = database.url.clone();
        move || {
            let mut observer = PgConnection::establish(&url).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < deadline {
                // Backends of this database waiting for a lock of any kind (an advisory lock,
                // or a row another batch wrote).
                let waiting: i64 = diesel::select(diesel::dsl::sql::<BigInt>(
                    "(SELECT count(DISTINCT pid) FROM pg_locks WHERE NOT granted AND pid IN \
                     (SELECT pid FROM pg_stat_activity WHERE datname = current_database()))",
                ))
                .get_result(&mut observer)
                .unwrap();
                if waiting >= 2 {
                    return true;
                }
                std::thread::yield_now();
            }
            false
        }
    });
    assert!(
        waiting_for_held.await.unwrap(),
        "both batches wait for a lock"
    );
    holder.batch_execute("COMMIT").unwrap();
    let mut created = Vec::new();
    while let Some(joined) = creates.join_next().await {
        let (id, outcome) = joined.unwrap();
        match outcome {
            Ok(()) => created.push(id),
            Err(CreateError::Refused(_) | CreateError::Quota(_)) => {}
            Err(other) => panic!("a create failed: {other:?}"),
        }
    }
    assert_eq!(created.len(), 10, "{created:?}");
    for id in &created {
        assert!(processes[0].find(id).await.unwrap().is_some());
    }
}
