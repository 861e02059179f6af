//! Webhook delivery is fair across merchants, and manual retries are capped (issue 12 §3, §5).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::{Application, unique};
use idconsent_e2e::{TestApp, json, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    a_hanging_receiver_does_not_delay_other_merchants,
    manual_retries_are_capped_per_delivery,
);

/// Creates a sandbox consent session for a fresh phone, reported to `callback`; returns its id
/// and when the create answered.
async fn create_consent(
    app: &TestApp,
    application: &Application,
    callback: &str,
) -> (String, Instant) {
    let body = json!({
        "clientId": application.client_id,
        "callbackUrl": callback,
        "recipient": format!("+1555{}", &unique()[..7]),
        "intent": "LOGIN",
        "transaction": {"type": "login", "description": "Sign in", "amount": 0, "currency": "USD", "payee": "Shop"}
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let created = app
        .signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    let answered = Instant::now();
    let created = json(created, 201).await;
    (
        created["data"]["sessionId"].as_str().unwrap().to_owned(),
        answered,
    )
}

async fn a_hanging_receiver_does_not_delay_other_merchants(app: TestApp) {
    let (hanging_url, _held) = Receiver::hanging().await;
    let slow_merchant = app.register_merchant().await;
    let slow = app.application_calling(&slow_merchant, &hanging_url).await;
    let healthy_receiver = Receiver::start().await;
    let healthy_merchant = app.register_merchant().await;
    let healthy = app
        .application_calling(&healthy_merchant, &healthy_receiver.url)
        .await;

    // The slow merchant's events first, so they are the oldest due: every one of them would
    // hold a delivery round for the 5 s timeout if rounds waited for their slowest attempt.
    join_all((0..12).map(|_| create_consent(&app, &slow, &hanging_url))).await;
    let mut created = HashMap::new();
    for _ in 0..20 {
        let (session, at) = create_consent(&app, &healthy, &healthy_receiver.url).await;
        created.insert(session, at);
        // Spread over a few seconds, while the slow lane stays full.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let received = healthy_receiver
        .wait_for(|received| {
            let events: Vec<_> = received
                .iter()
                .filter(|r| r.event_type() == "consent.created")
                .cloned()
                .collect();
            (events.len() >= created.len()).then_some(events)
        })
        .await;
    let mut delays: Vec<Duration> = received
        .iter()
        .map(|event| {
            let session = event.json()["data"]["sessionId"]
                .as_str()
                .unwrap()
                .to_owned();
            event.at.saturating_duration_since(created[&session])
        })
        .collect();
    delays.sort();
    let p99 = delays[(delays.len() * 99).div_ceil(100) - 1];
    assert!(
        p99 <= Duration::from_secs(1),
        "healthy merchant's p99 delivery delay {p99:?}; all: {delays:?}"
    );
}

async fn manual_retries_are_capped_per_delivery(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let (session, _) = create_consent(&app, &application, &receiver.url).await;
    receiver.event("consent.created", &session).await;
    let listed = json(
        app.signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let id = listed["data"]["deliveries"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v1/webhooks/deliveries/{id}/retry");
    // Twenty at once: ten are queued, ten are told when to come back.
    let retries = (0..20).map(|_| {
        app.signed(
            Method::POST,
            &path,
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
    });
    let mut statuses: HashMap<u16, usize> = HashMap::new();
    for retry in join_all(retries).await {
        let retry = retry.unwrap();
        let status = retry.status().as_u16();
        if status == 429 {
            let wait: u64 = retry.headers()["retry-after"]
                .to_str()
                .unwrap()
                .parse()
                .unwrap();
            assert!((3500..=3600).contains(&wait), "Retry-After {wait}");
            let body: Value = retry.json().await.unwrap();
            assert_eq!(body["type"], "rate_limited", "{body}");
        }
        *statuses.entry(status).or_default() += 1;
    }
    assert_eq!(statuses, HashMap::from([(202, 10), (429, 10)]));
    // An hour later the delivery may be retried again.
    app.advance(Duration::from_secs(3600));
    let again = app
        .signed(
            Method::POST,
            &path,
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(again, 202).await;
}
