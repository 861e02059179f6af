//! The signed-request check (CONTRACT §2.1) as every S endpoint pays it: parse the key, look it
//! up by keyed hash in SQLite, open the secret, check the timestamp, HMAC the body, compare in
//! constant time, and record the signature against replay.
//!
//! `cargo bench -p idconsent-server --bench signed_request`
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use idconsent_access::SignedHeaders;

const BODY: &[u8] = br#"{"clientId":"cli_01JDKX9Q6N8V3T5R7W2Y4Z6B8C","recipient":"+15551234567","intent":"LOGIN","callbackUrl":"https://merchant.example/hooks/consent","transaction":{"type":"login","description":"Sign in to Example Shop","amount":0,"currency":"USD","payee":"Example Shop"}}"#;

fn now_millis() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn signed_request(c: &mut Criterion) {
    let common::Wired {
        runtime,
        context,
        db,
        dir: _dir,
        ..
    } = common::wired();
    let created = runtime.block_on(common::merchant_application(
        &context,
        "https://merchant.example/hooks",
        None,
    ));
    let (api_key, secret) = (
        created.view.sandbox_api_key.as_str().to_owned(),
        created.secret,
    );

    let mut group = c.benchmark_group("signed_request");
    group.measurement_time(Duration::from_secs(8));

    // Each iteration gets a fresh timestamp, so the replay guard records a new signature,
    // exactly as for real traffic. Signing happens in the setup and is not measured.
    let mut counter = 0i64;
    group.bench_function("identify_and_verify (sqlite, with replay insert)", |b| {
        b.iter_batched(
            || {
                counter += 1;
                let timestamp = (now_millis() + counter % 1000).to_string();
                let body = [BODY, counter.to_string().as_bytes()].concat();
                let signature = idconsent_auth_hmac::sign_request(
                    secret.as_bytes(),
                    &api_key,
                    &timestamp,
                    &body,
                );
                (timestamp, signature, body)
            },
            |(timestamp, signature, body)| {
                runtime.block_on(async {
                    let identified = context
                        .services
                        .requests
                        .access
                        .identify(SignedHeaders {
                            api_key: Some(&api_key),
                            timestamp: Some(&timestamp),
                            signature: Some(&signature),
                        })
                        .await
                        .unwrap();
                    context
                        .services
                        .requests
                        .access
                        .verify(identified, &body)
                        .await
                        .unwrap()
                })
            },
            BatchSize::SmallInput,
        );
    });

    let timestamp = now_millis().to_string();
    let signature =
        idconsent_auth_hmac::sign_request(secret.as_bytes(), &api_key, &timestamp, BODY);
    group.bench_function("identify_only (key lookup, secret, window)", |b| {
        b.iter(|| {
            runtime.block_on(async {
                context
                    .services
                    .requests
                    .access
                    .identify(SignedHeaders {
                        api_key: Some(&api_key),
                        timestamp: Some(&timestamp),
                        signature: Some(&signature),
                    })
                    .await
                    .unwrap()
            })
        });
    });
    let mut n = 0u64;
    let replay_guard = idconsent_store_diesel::DieselMerchantStore::new(db.clone());
    group.bench_function("replay_insert_only", |b| {
        use idconsent_access::ports::ReplayGuard;
        b.iter(|| {
            n += 1;
            runtime.block_on(async {
                replay_guard
                    .first_use(
                        &format!("bench-{n}"),
                        idconsent_kernel::Timestamp::from_millis(now_millis() + 60_000),
                    )
                    .await
                    .unwrap()
            })
        });
    });
    group.bench_function("empty_blocking_roundtrip", |b| {
        b.iter(|| runtime.block_on(async { tokio::task::spawn_blocking(|| 1).await.unwrap() }));
    });
    group.bench_function("hmac_verify_only", |b| {
        use idconsent_access::ports::RequestSignatures;
        let port = idconsent_auth_hmac::HmacRequestSignatures;
        b.iter(|| port.verify(secret.as_bytes(), &api_key, &timestamp, BODY, &signature));
    });
    group.finish();
}

criterion_group!(benches, signed_request);
criterion_main!(benches);
