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

/// What the two-process cases below share: two processes' session stores on one PostgreSQL
/// database, and the sessions and charges they create.
mod two_processes {
    use std::sync::Arc;
    use std::time::Duration;

    use diesel::sql_types::BigInt;
    use diesel::{Connection, PgConnection, RunQueryDsl};
    use idconsent_consent::events::CONSENT_CREATED;
    use idconsent_consent::{FloodLimits, Session, SessionStatus, Transaction};
    use idconsent_kernel::id::{ApplicationId, ClientId, MerchantId, SessionId};
    use idconsent_kernel::{
        Charge, Currency, Environment, IdGenerator, Intent, Metric, Money, OsRandom, PhoneNumber,
        RandomSource, SystemClock, Timestamp, UlidGenerator, UsagePeriod,
    };
    use idconsent_store_diesel::testing::TestDatabase;
    use idconsent_store_diesel::{Db, DbOptions, DieselSessionStore};
    use idconsent_webhook::{Effects, Outbox};

    pub struct World {
        pub database: TestDatabase,
        /// Each with its own pool and batch thread, as two server processes have.
        pub processes: [DieselSessionStore; 2],
        pub ids: Arc<dyn IdGenerator>,
        pub application: ApplicationId,
        pub now: Timestamp,
        pub limits: FloodLimits,
    }

    impl World {
        pub fn on(database: TestDatabase, pending_per_application: u32) -> Self {
            let second = Db::open(&database.url, &DbOptions::default()).unwrap();
            let processes = [
                DieselSessionStore::new(database.db.clone()),
                DieselSessionStore::new(second),
            ];
            let ids: Arc<dyn IdGenerator> = Arc::new(UlidGenerator::new(
                Arc::new(SystemClock),
                Arc::new(OsRandom),
            ));
            Self {
                database,
                processes,
                application: ids.next(),
                ids,
                now: Timestamp::from_millis(1_763_719_200_000),
                limits: FloodLimits {
                    pending_per_application,
                    per_window: 100,
                    window: Duration::from_secs(3600),
                },
            }
        }

        pub fn merchant(&self) -> MerchantId {
            self.ids.next()
        }

        pub fn recipient(&self) -> PhoneNumber {
            let random: Arc<dyn RandomSource> = Arc::new(OsRandom);
            PhoneNumber::parse(&format!("+1555{}", random.digits(7))).unwrap()
        }

        /// The advisory lock a create for `recipient` takes (the store's `recipient_lock`).
        pub fn recipient_lock(recipient: &PhoneNumber) -> String {
            format!("consent:live:{}", recipient.as_str())
        }

        /// A pending live session for `recipient`, charged to `merchant` (quota `limit`).
        pub fn create(
            &self,
            recipient: PhoneNumber,
            merchant: &MerchantId,
            limit: Option<u64>,
        ) -> (Session, Effects) {
            let now = self.now;
            let session = Session {
                id: self.ids.next::<SessionId>(),
                application_id: self.application.clone(),
                client_id: self.ids.next::<ClientId>(),
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
                    self.ids.as_ref(),
                    CONSENT_CREATED,
                    self.application.clone(),
                    Environment::Live,
                    now,
                    serde_json::json!({"sessionId": session.id.as_str()}),
                    &[&session.callback_url],
                )],
                charges: vec![Charge {
                    merchant_id: merchant.clone(),
                    metric: Metric::Consents,
                    period: UsagePeriod::of(now),
                    limit,
                }],
            };
            (session, effects)
        }

        /// How many consents `merchant` has been charged this period.
        pub fn used(&self, merchant: &MerchantId) -> i64 {
            #[derive(diesel::QueryableByName)]
            struct Used {
                #[diesel(sql_type = BigInt)]
                used: i64,
            }
            let mut conn = PgConnection::establish(&self.database.url).unwrap();
            diesel::sql_query(format!(
                "SELECT coalesce(sum(used), 0)::BIGINT AS used FROM usage_counters \
                 WHERE merchant_id = '{}' AND metric = '{}' AND period = '{}'",
                merchant.as_str(),
                Metric::Consents.as_str(),
                UsagePeriod::of(self.now)
            ))
            .get_result::<Used>(&mut conn)
            .unwrap()
            .used
        }
    }

    /// Waits (at most 20 s) until `count` backends wait for a lock `holder` holds, or for one
    /// that a backend waiting for it holds.
    pub async fn until_blocked_by(url: &str, holder: i32, count: i64) -> bool {
        let url = url.to_owned();
        tokio::task::spawn_blocking(move || {
            let mut observer = PgConnection::establish(&url).unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(20);
            while std::time::Instant::now() < deadline {
                let blocked: i64 = diesel::select(diesel::dsl::sql::<BigInt>(&format!(
                    "(WITH RECURSIVE blocked (pid) AS ( \
                        SELECT pid FROM pg_stat_activity \
                         WHERE {holder} = ANY (pg_blocking_pids(pid)) \
                        UNION \
                        SELECT waiting.pid FROM pg_stat_activity waiting \
                          JOIN blocked ON blocked.pid = ANY (pg_blocking_pids(waiting.pid))) \
                      SELECT count(*) FROM blocked)"
                )))
                .get_result(&mut observer)
                .unwrap();
                if blocked >= count {
                    return true;
                }
                std::thread::yield_now();
            }
            false
        })
        .await
        .unwrap()
    }

    /// The backend id of a connection (what `pg_blocking_pids` names).
    pub fn backend_pid(conn: &mut PgConnection) -> i32 {
        diesel::select(diesel::dsl::sql::<diesel::sql_types::Integer>(
            "pg_backend_pid()",
        ))
        .get_result(conn)
        .unwrap()
    }
}

/// Two processes on one PostgreSQL database each batch their creates (ADR 0035). Their batches
/// take recipients' locks in one order, so they never deadlock however their recipients
/// interleave, and the flood limit and each merchant's quota hold across both.
#[tokio::test]
async fn two_processes_batches_share_the_limits_and_never_deadlock() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, PgConnection};
    use idconsent_consent::SessionRepository;
    use idconsent_consent::ports::CreateError;
    use two_processes::{World, backend_pid, until_blocked_by};

    let Some(database) = TestDatabase::postgres() else {
        return;
    };
    let world = World::on(database, 3);
    let merchants = [world.merchant(), world.merchant()];
    let recipients: Vec<_> = (0..6).map(|_| world.recipient()).collect();
    // A third connection holds one recipient's lock until both processes' batches wait — for
    // it, or for a lock the other batch holds — so that they surely overlap.
    let held = World::recipient_lock(&recipients[3]);
    let mut holder = PgConnection::establish(&world.database.url).unwrap();
    let holder_pid = backend_pid(&mut holder);
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_xact_lock(hashtext('{held}'))"
        ))
        .unwrap();
    // 6 recipients × 3 pending would admit 18; the quotas of 5 per merchant admit 10.
    let mut creates = tokio::task::JoinSet::new();
    for n in 0..120_usize {
        let process = world.processes[n % 2].clone();
        // The two processes walk the recipients, and the merchants, in opposite orders.
        let turn = n / 2;
        let (recipient, merchant) = if n % 2 == 0 {
            (
                recipients[turn % recipients.len()].clone(),
                &merchants[turn % 2],
            )
        } else {
            (
                recipients[recipients.len() - 1 - turn % recipients.len()].clone(),
                &merchants[1 - turn % 2],
            )
        };
        let (session, effects) = world.create(recipient, merchant, Some(5));
        let (limits, now) = (world.limits, world.now);
        creates.spawn(async move {
            let outcome = process.create(&session, &effects, &limits, now).await;
            (session.id, outcome)
        });
    }
    // Both processes' batches wait: for the held lock, or for the batch that waits for it.
    assert!(
        until_blocked_by(&world.database.url, holder_pid, 1).await,
        "a batch waits for the held lock"
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
        assert!(world.processes[0].find(id).await.unwrap().is_some());
    }
    for merchant in &merchants {
        assert_eq!(world.used(merchant), 5);
    }
}

/// Two processes batch creates for two merchants in opposite orders — one batch charges A then
/// B, the other B then A — for recipients of their own, so no recipient lock orders the two
/// batches. Each batch takes its merchants' counter rows in one fixed order before it writes,
/// so neither waits for a row the other holds while holding one it needs (issue 31 §6): with
/// the rows taken as each create came, the batch holding B waits for A, the batch holding A
/// waits for B, and PostgreSQL fails one of them with every create in it.
#[tokio::test]
async fn two_processes_batching_two_merchants_in_opposite_orders_never_deadlock() {
    use diesel::connection::SimpleConnection;
    use diesel::{Connection, PgConnection};
    use idconsent_consent::SessionRepository;
    use idconsent_kernel::{Metric, UsagePeriod};
    use two_processes::{World, backend_pid, until_blocked_by};

    let Some(database) = TestDatabase::postgres() else {
        return;
    };
    let world = World::on(database, 3);
    let (a, b, plugs) = (world.merchant(), world.merchant(), world.merchant());
    // The counter rows exist (earlier consents this month), so a third connection can hold one.
    let mut holder = PgConnection::establish(&world.database.url).unwrap();
    let holder_pid = backend_pid(&mut holder);
    let period = UsagePeriod::of(world.now);
    let metric = Metric::Consents.as_str();
    holder
        .batch_execute(&format!(
            "INSERT INTO usage_counters (merchant_id, metric, period, used) VALUES \
             ('{a}', '{metric}', '{period}', 0), ('{b}', '{metric}', '{period}', 0)"
        ))
        .unwrap();
    // Each process's batch thread is kept busy by a create whose recipient's lock the holder
    // has, while the creates to judge queue behind it — so that each process's next batch
    // holds them all, in the order they came. The holder also has A's counter row.
    let plug_recipients = [world.recipient(), world.recipient()];
    let plug_locks = plug_recipients.each_ref().map(World::recipient_lock);
    holder
        .batch_execute(&format!(
            "BEGIN; SELECT pg_advisory_lock(hashtext('{}')), pg_advisory_lock(hashtext('{}')); \
             SELECT 1 FROM usage_counters WHERE merchant_id = '{a}' FOR UPDATE",
            plug_locks[0], plug_locks[1],
        ))
        .unwrap();
    let mut creates = tokio::task::JoinSet::new();
    let mut spawn = |process: usize, (session, effects): (idconsent_consent::Session, _)| {
        let store = world.processes[process].clone();
        let (limits, now) = (world.limits, world.now);
        creates.spawn(async move { store.create(&session, &effects, &limits, now).await });
    };
    for (process, recipient) in plug_recipients.into_iter().enumerate() {
        spawn(process, world.create(recipient, &plugs, None));
    }
    assert!(
        until_blocked_by(&world.database.url, holder_pid, 2).await,
        "both plugs wait"
    );
    // Process 0's next batch charges A, B, A, B…; process 1's B, A, B, A…
    for turn in 0..8 {
        let (first, second) = if turn % 2 == 0 { (&a, &b) } else { (&b, &a) };
        spawn(0, world.create(world.recipient(), first, None));
        spawn(1, world.create(world.recipient(), second, None));
    }
    // The spawned creates reach their batch queues before this task runs again (one thread).
    tokio::task::yield_now().await;
    let unplug = |holder: &mut PgConnection, lock: &str| {
        holder
            .batch_execute(&format!("SELECT pg_advisory_unlock(hashtext('{lock}'))"))
            .unwrap();
    };
    // Process 0's batch first: it waits for A, which the holder has…
    unplug(&mut holder, &plug_locks[0]);
    assert!(
        until_blocked_by(&world.database.url, holder_pid, 2).await,
        "process 0's batch waits (and process 1's plug)"
    );
    // …then process 1's: it waits too, behind process 0's batch or the holder.
    unplug(&mut holder, &plug_locks[1]);
    assert!(
        until_blocked_by(&world.database.url, holder_pid, 2).await,
        "both batches wait"
    );
    holder.batch_execute("COMMIT").unwrap();
    let mut failed = Vec::new();
    while let Some(joined) = creates.join_next().await {
        if let Err(error) = joined.unwrap() {
            failed.push(format!("{error:?}"));
        }
    }
    assert!(failed.is_empty(), "creates failed: {failed:?}");
    assert_eq!((world.used(&a), world.used(&b)), (8, 8));
}
