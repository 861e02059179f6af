//! The OAuth token exchange (`POST /v1/oauth/token`, issue 6) through the real wiring: the
//! signed-request check (key lookup, HMAC, replay insert), then the exchange itself: one
//! transaction that reads the grant by its code id with the session's status, checks the code's
//! secret and PKCE S256 and spends the code; then the ES256 access token.
//!
//! Each iteration's code is prepared untimed (`iter_batched`): an OAuth request, a sandbox
//! approval, the status read that reveals the code, and the request signature.
//!
//! `taskset -c 0 cargo bench -p idconsent-server --bench token_exchange`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{Criterion, criterion_group, criterion_main};
use idconsent_access::Caller;
use idconsent_access::SignedHeaders;
use idconsent_consent::Decision;
use idconsent_oauth::CreateAccessRequest;
use idconsent_server::http::consents::requester;
use idconsent_server::wiring::Deployment;

const REDIRECT: &str = "https://shop.example/oauth/callback";
/// RFC 7636 appendix B.
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

struct Bench {
    runtime: tokio::runtime::Runtime,
    context: Deployment,
    caller: Caller,
    api_key: String,
    secret: String,
    prepared: u64,
    _dir: tempfile::TempDir,
}

impl Bench {
    fn new() -> Self {
        let common::Wired {
            runtime,
            context,
            dir,
            ..
        } = common::wired();
        // Nobody listens at the callback: deliveries fail and retry later, off the timed path.
        let created = runtime.block_on(common::merchant_application(
            &context,
            "http://127.0.0.1:9/hooks",
            Some(vec![REDIRECT.into()]),
        ));
        let (api_key, secret) = (
            created.view.sandbox_api_key.as_str().to_owned(),
            created.secret,
        );
        let caller = runtime.block_on(Self::identify_with(&context, &api_key, &secret));
        Self {
            runtime,
            context,
            caller,
            api_key,
            secret,
            prepared: 0,
            _dir: dir,
        }
    }

    async fn identify_with(context: &Deployment, api_key: &str, secret: &str) -> Caller {
        let timestamp = now_millis().to_string();
        let signature =
            idconsent_auth_hmac::sign_request(secret.as_bytes(), api_key, &timestamp, b"{}");
        let identified = context
            .services
            .requests
            .access
            .identify(SignedHeaders {
                api_key: Some(api_key),
                timestamp: Some(&timestamp),
                signature: Some(&signature),
            })
            .await
            .unwrap();
        context
            .services
            .requests
            .access
            .verify(identified, b"{}")
            .await
            .unwrap()
    }

    /// An approved OAuth request's code, and a signed exchange request for it.
    fn prepare(&mut self) -> Prepared {
        self.prepared += 1;
        let n = self.prepared;
        let context = &self.context;
        let requester = requester(&self.caller);
        let code = self.runtime.block_on(async {
            let session = context
                .services
                .oauth
                .create(
                    &requester,
                    &[REDIRECT.to_owned()],
                    "http://127.0.0.1:9/hooks",
                    CreateAccessRequest {
                        recipient: format!("+1556{:07}", n % 10_000_000),
                        redirect_uri: REDIRECT.into(),
                        code_challenge: CHALLENGE.into(),
                        code_challenge_method: None,
                        claims: vec!["phone_number".into()],
                        scopes: vec!["openid".into()],
                        callback_url: None,
                        state: Some(format!("bench-{n}")),
                        description: None,
                    },
                )
                .await
                .unwrap()
                .session;
            let session = context
                .services
                .consents
                .sandbox_session(&requester, session.id.as_str())
                .await
                .unwrap();
            let session = context
                .services
                .oauth
                .decide(
                    session,
                    Decision::Approve,
                    idconsent_consent::DecidedBy::SandboxHelper,
                    idconsent_webhook::Effects::default(),
                )
                .await
                .unwrap();
            let status = context
                .services
                .oauth
                .status(&requester, session.id.as_str())
                .await
                .unwrap();
            status.code.expect("an unconsumed code")
        });
        let body = serde_json::to_vec(&serde_json::json!({"code": code, "codeVerifier": VERIFIER}))
            .unwrap();
        // Distinct timestamps: the replay guard keys on the signature.
        let timestamp = (now_millis() + (n % 1000) as i64).to_string();
        let signature = idconsent_auth_hmac::sign_request(
            self.secret.as_bytes(),
            &self.api_key,
            &timestamp,
            &body,
        );
        Prepared {
            code,
            body,
            timestamp,
            signature,
        }
    }
}

impl Bench {
    /// Prepares `iterations` codes untimed, then times their exchanges, each after the
    /// signed-request check when `signed`.
    fn run(&mut self, iterations: u64, signed: bool) -> Duration {
        let prepared: Vec<Prepared> = (0..iterations).map(|_| self.prepare()).collect();
        let (context, api_key) = (&self.context, self.api_key.as_str());
        let fallback = requester(&self.caller);
        let started = std::time::Instant::now();
        self.runtime.block_on(async {
            for request in &prepared {
                let requester = if signed {
                    let identified = context
                        .services
                        .requests
                        .access
                        .identify(SignedHeaders {
                            api_key: Some(api_key),
                            timestamp: Some(&request.timestamp),
                            signature: Some(&request.signature),
                        })
                        .await
                        .unwrap();
                    let caller = context
                        .services
                        .requests
                        .access
                        .verify(identified, &request.body)
                        .await
                        .unwrap();
                    requester(&caller)
                } else {
                    fallback.clone()
                };
                let granted = context
                    .services
                    .oauth
                    .exchange(&requester, &request.code, VERIFIER)
                    .await
                    .unwrap();
                std::hint::black_box(granted);
            }
        });
        started.elapsed()
    }
}

struct Prepared {
    code: String,
    body: Vec<u8>,
    timestamp: String,
    signature: String,
}

fn token_exchange(c: &mut Criterion) {
    let mut bench = Bench::new();
    let mut group = c.benchmark_group("token_exchange");
    group.measurement_time(Duration::from_secs(10));
    group.sample_size(60);

    // What `POST /v1/oauth/token` does after actix has parsed the request.
    group.bench_function("signed_check_and_exchange (sqlite)", |b| {
        b.iter_custom(|iterations| bench.run(iterations, true));
    });
    // The exchange alone: no signed-request check.
    group.bench_function("exchange_only (sqlite)", |b| {
        b.iter_custom(|iterations| bench.run(iterations, false));
    });
    group.finish();
}

criterion_group!(benches, token_exchange);
criterion_main!(benches);
