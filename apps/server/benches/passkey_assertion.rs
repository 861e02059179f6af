//! `authenticate/complete` (issue 5): a real passkey assertion verified against its challenge,
//! then the state change it buys, through the real wiring (`Deployment` on a SQLite file,
//! `idconsent-webauthn` with ring for assertions, the diesel store). A software passkey signs in
//! the untimed setup of every iteration; only `EndUserService::authenticate_complete` is timed.
//!
//! `taskset -c 0 cargo bench -p idconsent-server --bench passkey_assertion`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use idconsent_enduser::events::AUTH_SUCCESS;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use idconsent_consent::{
    ConsentPorts, ConsentService, ConsentSettings, CreateRequest, Decision, FloodLimits,
    RecipientDirectory, Requester, StoreError as ConsentStoreError, TransactionInput,
};
use idconsent_enduser::ports::{ChallengeRepository, DeviceRepository, PasskeyCeremony, Spent};
use idconsent_enduser::{Challenge, EnrollRequest};
use idconsent_kernel::id::{ChallengeId, TypedId};
use idconsent_kernel::{Environment, PhoneNumber};
use idconsent_passkey_soft::SoftPasskey;
use idconsent_server::wiring::Deployment;
use idconsent_store_diesel::{DieselEndUserStore, DieselSessionStore};
use idconsent_webauthn::WebauthnCeremony;
use idconsent_webhook::Outbox;
use serde_json::{Value, json};
use tokio::runtime::Runtime;

/// The WebAuthn origin `Config::for_tests` accepts (RP ID `localhost`).
const ORIGIN: &str = "http://localhost:8080";
const PHONE: &str = "+15557654321";
const CALLBACK: &str = "https://merchant.example/hooks/consent";

/// Sandbox sessions never ask whether the recipient is enrolled; this directory is never called.
#[derive(Debug)]
struct Anyone;

#[async_trait]
impl RecipientDirectory for Anyone {
    async fn is_enrolled(&self, _phone: &PhoneNumber) -> Result<bool, ConsentStoreError> {
        Ok(true)
    }
}

struct Bench {
    runtime: Runtime,
    context: Deployment,
    store: DieselEndUserStore,
    passkey: SoftPasskey,
    requester: Requester,
    /// Creates the sessions to approve. The same tables as the wired consent service, but without the
    /// flood limits (5 pending per application, 30 an hour per recipient), which a bench
    /// approving thousands of sessions for one phone would hit at once.
    creator: ConsentService,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let common::Wired {
            runtime,
            context,
            db,
            dir,
        } = common::wired();
        let creator = ConsentService::new(
            ConsentPorts {
                sessions: Arc::new(DieselSessionStore::new(db.clone())),
                recipients: Arc::new(Anyone),
                metering: Arc::new(idconsent_kernel::Unmetered),
                clock: common::clock(),
                ids: common::ids(),
                outbox_written: None,
                qr: Arc::new(idconsent_qr_render::QrCodegenRenderer::default()),
            },
            ConsentSettings {
                flood: FloodLimits {
                    pending_per_application: u32::MAX,
                    per_window: u32::MAX,
                    window: Duration::from_secs(1),
                },
                ..context.services.consents.settings().clone()
            },
        );
        let mut passkey = SoftPasskey::new().unwrap();
        let requester = runtime.block_on(async {
            enroll(&context, &mut passkey, PHONE).await;
            merchant_application(&context).await
        });
        Self {
            runtime,
            store: DieselEndUserStore::new(db),
            context,
            passkey,
            requester,
            creator,
            _dir: dir,
        }
    }

    /// `authenticate/begin` and the passkey's assertion: the app's half (not timed).
    fn begin_and_sign(&mut self, purpose: &str, id: Option<String>) -> (String, Value) {
        let begun = self
            .runtime
            .block_on(
                self.context
                    .services
                    .endusers
                    .authenticate_begin(PHONE, purpose, id),
            )
            .unwrap();
        let credential = self.passkey.authenticate(ORIGIN, &begun.options).unwrap();
        (begun.challenge_id.to_string(), credential)
    }

    /// A pending sandbox consent session for the enrolled phone.
    fn new_session(&self) -> idconsent_consent::Session {
        self.runtime.block_on(self.session_for(PHONE))
    }

    async fn session_for(&self, phone: &str) -> idconsent_consent::Session {
        self.creator
            .create(
                &self.requester,
                CreateRequest {
                    client_id: self.requester.client_id.to_string(),
                    recipient: phone.into(),
                    intent: "LOGIN".into(),
                    callback_url: CALLBACK.into(),
                    transaction: TransactionInput {
                        kind: "login".into(),
                        description: "Sign in to Bench Shop".into(),
                        amount: "0".into(),
                        currency: "USD".into(),
                        payee: "Bench Shop".into(),
                    },
                },
            )
            .await
            .unwrap()
            .session
    }

    fn complete(&self, challenge_id: &str, credential: &Value) -> String {
        self.runtime
            .block_on(self.context.services.endusers.authenticate_complete(
                challenge_id,
                credential,
                true,
            ))
            .unwrap()
            .status
    }
}

/// Enrollment as the app does it (CONTRACT §3): SMS code, passkey registration, verification.
async fn enroll(context: &Deployment, passkey: &mut SoftPasskey, phone: &str) {
    let endusers = &context.services.endusers;
    let enrollment = endusers
        .enroll(
            EnrollRequest {
                phone: phone.into(),
                name: Some("Bench User".into()),
                device_name: Some("Bench phone".into()),
                platform: Some("android".into()),
            },
            "bench-installation",
            None,
        )
        .await
        .unwrap();
    let messages = context
        .services
        .notifier
        .sent_to(&idconsent_notification::Address::parse(phone).unwrap(), 10)
        .await
        .unwrap();
    let code = messages
        .last()
        .and_then(|message| message.code.clone())
        .unwrap();
    let (challenge_id, options) = endusers
        .register_begin(enrollment.id.as_str(), &code)
        .await
        .unwrap();
    let credential = passkey.register(ORIGIN, &options).unwrap();
    endusers
        .register_complete(challenge_id.as_str(), &credential, None)
        .await
        .unwrap();
    let begun = endusers
        .authenticate_begin(phone, "enrollment", Some(enrollment.id.to_string()))
        .await
        .unwrap();
    let credential = passkey.authenticate(ORIGIN, &begun.options).unwrap();
    endusers
        .verify_enrollment(
            enrollment.id.as_str(),
            begun.challenge_id.as_str(),
            &credential,
        )
        .await
        .unwrap();
}

/// A merchant with one application, as the consent's requester (sandbox).
async fn merchant_application(context: &Deployment) -> Requester {
    let created =
        common::merchant_application(context, "https://merchant.example/hooks", None).await;
    let application = created.view.application;
    Requester {
        application_id: application.id.clone(),
        client_id: application.client_id.clone(),
        environment: Environment::Sandbox,
        allowed_intents: application.request_types.iter().collect(),
    }
}

fn authenticate_complete(c: &mut Criterion) {
    let mut bench = Bench::new();

    // Once each, outside criterion: the paths work and end where they should.
    let (challenge, credential) = bench.begin_and_sign("login", None);
    assert_eq!(bench.complete(&challenge, &credential), "authenticated");
    let session = bench.new_session();
    let (challenge, credential) = bench.begin_and_sign("consent", Some(session.id.to_string()));
    assert_eq!(bench.complete(&challenge, &credential), "approved");

    let mut group = c.benchmark_group("authenticate_complete");
    group.measurement_time(Duration::from_secs(8));

    // Assertions are made in the order they are verified, so the signature counter only rises.
    let cell = std::cell::RefCell::new(bench);
    group.bench_function("login", |b| {
        b.iter_batched(
            || cell.borrow_mut().begin_and_sign("login", None),
            |(challenge, credential)| cell.borrow().complete(&challenge, &credential),
            BatchSize::SmallInput,
        );
    });
    group.bench_function("consent_approve", |b| {
        b.iter_batched(
            || {
                let mut bench = cell.borrow_mut();
                let session = bench.new_session();
                bench.begin_and_sign("consent", Some(session.id.to_string()))
            },
            |(challenge, credential)| cell.borrow().complete(&challenge, &credential),
            BatchSize::SmallInput,
        );
    });
    group.finish();

    concurrent_approvals(c, &mut cell.borrow_mut());

    if std::env::var_os("IDC_STEPS").is_some() {
        steps(&mut cell.borrow_mut(), 2000);
    }
    // Last: its store benches move the device's counter far ahead of the soft passkey's.
    parts(c, &mut cell.borrow_mut());
}

/// Users approving at the same time, as a server sees them under load: one approval per user
/// (a device's counter must rise, so one device's assertions are verified one after another).
const CONCURRENT_USERS: usize = 32;

/// `authenticate/complete` of [`CONCURRENT_USERS`] consent approvals at once, each by another
/// user with a passkey of their own; criterion reports approvals per second. Under
/// `taskset -c 0` everything (the service, the SQLite writer thread) shares one core, and the
/// writer commits the approvals that arrive together as one group, as it does in the server.
fn concurrent_approvals(c: &mut Criterion, bench: &mut Bench) {
    let users: Vec<(String, SoftPasskey)> = (0..CONCURRENT_USERS)
        .map(|n| {
            let phone = format!("+1555800{n:04}");
            let mut passkey = SoftPasskey::new().unwrap();
            bench
                .runtime
                .block_on(enroll(&bench.context, &mut passkey, &phone));
            (phone, passkey)
        })
        .collect();
    let mut users = users;
    let mut group = c.benchmark_group("authenticate_complete_concurrent");
    group.throughput(criterion::Throughput::Elements(CONCURRENT_USERS as u64));
    group.measurement_time(Duration::from_secs(10));
    group.bench_function(format!("consent_approve_{CONCURRENT_USERS}_users"), |b| {
        b.iter_custom(|rounds| {
            let mut total = Duration::ZERO;
            for _ in 0..rounds {
                // Untimed: a pending session and a signed assertion per user.
                let signed: Vec<(String, Value)> = users
                    .iter_mut()
                    .map(|(phone, passkey)| {
                        let begun = bench.runtime.block_on(async {
                            let session = bench.session_for(phone).await;
                            bench
                                .context
                                .services
                                .endusers
                                .authenticate_begin(phone, "consent", Some(session.id.to_string()))
                                .await
                                .unwrap()
                        });
                        let credential = passkey.authenticate(ORIGIN, &begun.options).unwrap();
                        (begun.challenge_id.to_string(), credential)
                    })
                    .collect();
                let started = std::time::Instant::now();
                let statuses =
                    bench
                        .runtime
                        .block_on(futures_util::future::join_all(signed.iter().map(
                            |(challenge, credential)| {
                                bench
                                    .context
                                    .services
                                    .endusers
                                    .authenticate_complete(challenge, credential, true)
                            },
                        )));
                total += started.elapsed();
                for status in statuses {
                    assert_eq!(status.unwrap().status, "approved");
                }
            }
            total
        });
    });
    group.finish();
}

/// Per-step times of the store calls and the verification `authenticate/complete` makes, each
/// timed in place, in the service's order, on the same challenges the service would see
/// (`IDC_STEPS=1`). Alternates with the service itself, so both run under the same conditions.
fn steps(bench: &mut Bench, rounds: usize) {
    use std::time::Instant;

    const NAMES: [&str; 6] = [
        "parse credential id",
        "read challenge + device + user",
        "finish_authentication (ring)",
        "write spend challenge + counter",
        "read consent session",
        "write decide consent + outbox",
    ];
    let ceremony = WebauthnCeremony::from_origin_list(
        &bench.context.config.passkeys.rp_id,
        &bench.context.config.passkeys.rp_origins,
    )
    .unwrap();
    let mut step_times: Vec<Vec<Duration>> = vec![Vec::new(); NAMES.len()];
    let mut replica_times = Vec::new();
    let mut service_times = Vec::new();
    for round in 0..rounds {
        let session = bench.new_session();
        let (challenge_id, credential) =
            bench.begin_and_sign("consent", Some(session.id.to_string()));
        if round % 2 == 1 {
            let started = Instant::now();
            assert_eq!(bench.complete(&challenge_id, &credential), "approved");
            service_times.push(started.elapsed());
            continue;
        }
        let (rt, store, context) = (&bench.runtime, &bench.store, &bench.context);
        let mut times = [Duration::ZERO; NAMES.len()];
        let mut lap = Instant::now();
        let mut mark = |step: usize| {
            times[step] = lap.elapsed();
            lap = Instant::now();
        };
        let started = Instant::now();
        let id = ChallengeId::parse(&challenge_id).unwrap();
        let credential_id = ceremony.asserted_credential_id(&credential).unwrap();
        mark(0);
        let inputs = rt
            .block_on(store.read_assertion(&id, Some(&credential_id)))
            .unwrap();
        let (challenge, device) = (inputs.challenge.unwrap(), inputs.device.unwrap());
        assert!(inputs.user.is_some());
        mark(1);
        let verified = ceremony
            .finish_authentication(&challenge.state, &credential)
            .unwrap();
        mark(2);
        let now = common::clock().now();
        assert_eq!(
            rt.block_on(store.spend_assertion(&id, &device.id, verified.counter, now))
                .unwrap(),
            Spent::Spent
        );
        mark(3);
        let loaded = rt
            .block_on(context.services.consents.load(session.id.as_str()))
            .unwrap();
        mark(4);
        let also = vec![Outbox::new(
            common::ids().as_ref(),
            AUTH_SUCCESS,
            loaded.application_id.clone(),
            loaded.environment,
            now,
            json!({"challengeId": challenge_id, "phone": PHONE}),
            &[CALLBACK],
        )];
        rt.block_on(context.services.consents.decide(
            loaded,
            Decision::Approve,
            idconsent_webhook::Effects::events(also),
        ))
        .unwrap();
        mark(5);
        replica_times.push(started.elapsed());
        for (all, time) in step_times.iter_mut().zip(times) {
            all.push(time);
        }
    }
    let stats = |times: &mut Vec<Duration>| {
        times.sort();
        let mean = times.iter().sum::<Duration>().as_secs_f64() / times.len() as f64;
        (mean * 1e6, times[times.len() / 2].as_secs_f64() * 1e6)
    };
    eprintln!("\nIn-place steps of authenticate/complete (consent approve), {rounds} rounds:");
    eprintln!("{:<40} {:>10} {:>10}", "step", "mean µs", "median µs");
    for (name, times) in NAMES.iter().zip(step_times.iter_mut()) {
        let (mean, median) = stats(times);
        eprintln!("{name:<40} {mean:>10.1} {median:>10.1}");
    }
    let (mean, median) = stats(&mut replica_times);
    eprintln!(
        "{:<40} {mean:>10.1} {median:>10.1}",
        "sum of the steps (replica)"
    );
    let (mean, median) = stats(&mut service_times);
    eprintln!(
        "{:<40} {mean:>10.1} {median:>10.1}",
        "EndUserService::authenticate_complete"
    );
}

/// The pieces of `authenticate/complete`, each alone, to split verification from storage.
fn parts(c: &mut Criterion, bench: &mut Bench) {
    let mut group = c.benchmark_group("authenticate_complete_parts");
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));

    // One begun login challenge and its assertion; nothing below spends it.
    let (challenge_id, credential) = bench.begin_and_sign("login", None);
    let challenge_id = ChallengeId::parse(&challenge_id).unwrap();
    let rt = &bench.runtime;
    let store = &bench.store;
    let context = &bench.context;
    let challenge: Challenge = rt
        .block_on(ChallengeRepository::find(store, &challenge_id))
        .unwrap()
        .expect("the challenge");
    let ceremony = WebauthnCeremony::from_origin_list(
        &context.config.passkeys.rp_id,
        &context.config.passkeys.rp_origins,
    )
    .unwrap();
    let credential_id = ceremony.asserted_credential_id(&credential).unwrap();
    let device = rt
        .block_on(store.by_credential(&credential_id))
        .unwrap()
        .expect("the device");

    // Pure computation: no database.
    group.bench_function("verify/finish_authentication (ring)", |b| {
        b.iter(|| {
            ceremony
                .finish_authentication(&challenge.state, &credential)
                .unwrap()
        });
    });
    group.bench_function("verify/asserted_credential_id (parse only)", |b| {
        b.iter(|| ceremony.asserted_credential_id(&credential).unwrap());
    });
    group.bench_function("verify/p256_verify (ring, reference)", |b| {
        use ring::signature::{self, KeyPair as _};
        let rng = ring::rand::SystemRandom::new();
        let alg = &signature::ECDSA_P256_SHA256_ASN1_SIGNING;
        let pkcs8 = signature::EcdsaKeyPair::generate_pkcs8(alg, &rng).unwrap();
        let key = signature::EcdsaKeyPair::from_pkcs8(alg, pkcs8.as_ref(), &rng).unwrap();
        let message = [7u8; 69];
        let signed = key.sign(&rng, &message).unwrap();
        let public = signature::UnparsedPublicKey::new(
            &signature::ECDSA_P256_SHA256_ASN1,
            key.public_key().as_ref().to_vec(),
        );
        b.iter(|| public.verify(&message, signed.as_ref()).unwrap());
    });

    // The store calls `authenticate/complete` makes, in order. The counters written below run
    // far ahead of the soft passkey's, which signs nothing after this.
    let counter = std::cell::Cell::new(device.counter + 1_000_000);
    let next_counter = || {
        counter.set(counter.get() + 1);
        counter.get()
    };
    group.bench_function("store/read challenge + device + user", |b| {
        b.iter(|| {
            rt.block_on(store.read_assertion(&challenge_id, Some(&credential_id)))
                .unwrap()
        });
    });
    // As in `authenticate/complete`, where every read follows some write.
    group.bench_function(
        "store/read challenge + device + user (after a write)",
        |b| {
            b.iter_batched(
                || {
                    rt.block_on(store.record_use(&device.id, next_counter(), common::clock().now()))
                        .unwrap()
                },
                |_| {
                    rt.block_on(store.read_assertion(&challenge_id, Some(&credential_id)))
                        .unwrap()
                },
                BatchSize::SmallInput,
            );
        },
    );
    group.bench_function("store/read challenge", |b| {
        b.iter(|| {
            rt.block_on(ChallengeRepository::find(store, &challenge_id))
                .unwrap()
        });
    });
    group.bench_function("store/write spend challenge + counter", |b| {
        b.iter_batched(
            || {
                let fresh = Challenge {
                    id: common::ids().next(),
                    ..challenge.clone()
                };
                rt.block_on(ChallengeRepository::insert(store, &fresh))
                    .unwrap();
                fresh.id
            },
            |id| {
                assert_eq!(
                    rt.block_on(store.spend_assertion(
                        &id,
                        &device.id,
                        next_counter(),
                        common::clock().now()
                    ))
                    .unwrap(),
                    Spent::Spent
                )
            },
            BatchSize::SmallInput,
        );
    });
    let any_session = bench.new_session();
    let session_id = any_session.id.to_string();
    group.bench_function("store/read consent session", |b| {
        b.iter(|| {
            rt.block_on(context.services.consents.load(&session_id))
                .unwrap()
        });
    });
    group.bench_function("store/write decide consent (+2 outbox rows)", |b| {
        b.iter_batched(
            || bench.new_session(),
            |session| {
                let also = vec![Outbox::new(
                    common::ids().as_ref(),
                    AUTH_SUCCESS,
                    session.application_id.clone(),
                    session.environment,
                    common::clock().now(),
                    json!({"challengeId": challenge_id, "phone": PHONE}),
                    &[CALLBACK],
                )];
                rt.block_on(context.services.consents.decide(
                    session,
                    Decision::Approve,
                    idconsent_webhook::Effects::events(also),
                ))
                .unwrap()
            },
            BatchSize::SmallInput,
        );
    });
    group.bench_function("empty_blocking_roundtrip", |b| {
        b.iter(|| rt.block_on(async { tokio::task::spawn_blocking(|| 1).await.unwrap() }));
    });
    group.finish();
}

criterion_group!(benches, authenticate_complete);
criterion_main!(benches);
