//! Several stateless processes on one PostgreSQL behind a load balancer (issue 18): requests
//! land on either process through nginx, and a process killed in the middle of webhook delivery
//! loses nothing — its leased deliveries are delivered by the other when the lease ends.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_e2e::nginx::Nginx;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::unique;
use idconsent_e2e::{Backend, TestApp, json};
use reqwest::Method;
use serde_json::json;

/// One process holds fewer than 128 attempts of an application in flight (ADR 0027), so of 140
/// events held at the receiver each process has some — the killed one at least 13 — and all are
/// in flight together, within the 5 s webhook timeout.
const EVENTS: usize = 140;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_killed_during_webhook_delivery_loses_nothing() {
    if !Nginx::available() {
        assert!(
            std::env::var("CI").is_err(),
            "nginx is required under CI (.ci/run installs it)"
        );
        eprintln!("note: nginx is not installed; the two-process test is skipped");
        return;
    }
    let Some(mut app) = TestApp::start(Backend::Postgres).await else {
        return;
    };
    let first: SocketAddr = app.base.trim_start_matches("http://").parse().unwrap();
    let second = app.second_server().await;
    let nginx = Nginx::start(&[first, second.addr()]).await;
    // From here on every request goes through nginx, to either process.
    app.base = nginx.url.clone();

    let receiver = Receiver::gated().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let creates = (0..EVENTS).map(|_| {
        let body = serde_json::to_vec(&json!({
            "clientId": application.client_id,
            "callbackUrl": receiver.url,
            "recipient": format!("+1555{}", &unique()[..7]),
            "intent": "LOGIN",
            "transaction": {"type": "login", "description": "Sign in", "amount": 0,
                            "currency": "USD", "payee": "Shop"}
        }))
        .unwrap();
        app.signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &body,
        )
        .send()
    });
    for created in join_all(creates).await {
        json(created.unwrap(), 201).await;
    }
    // Both processes deliver; the receiver holds every request unanswered. Counted by delivery
    // (`webhook-id`), not by request: under load an attempt can time out and be sent again by
    // the same process, and a count of requests would then be reached with one process alone.
    receiver
        .wait_for(|received| {
            let deliveries: HashSet<&str> = received
                .iter()
                .filter_map(|request| request.header("webhook-id"))
                .collect();
            (deliveries.len() >= EVENTS).then_some(())
        })
        .await;

    // One process dies with its attempts in flight; the receiver then answers the survivor's.
    second.kill().await;
    receiver.open();
    let succeeded = || async {
        let listed = app
            .signed(
                Method::GET,
                "/v1/webhooks/deliveries?status=succeeded",
                &application.sandbox_key,
                &application.secret,
                b"",
            )
            .send()
            .await
            .unwrap();
        json(listed, 200).await["data"]["pagination"]["total"]
            .as_u64()
            .unwrap() as usize
    };
    // Until the survivor's own attempts are recorded (the count stops moving).
    let mut recorded = succeeded().await;
    loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let now = succeeded().await;
        if now == recorded {
            break;
        }
        recorded = now;
    }
    let stranded = EVENTS - recorded;
    assert!(
        stranded > 0,
        "the killed process held no delivery ({recorded} of {EVENTS} recorded as delivered by the survivor)"
    );

    // The killed process's leases end 30 s (of service time) after they were taken; then the
    // survivor delivers them.
    app.advance(Duration::from_secs(31));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while succeeded().await < EVENTS {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the {stranded} deliveries the killed process held were not delivered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let delivered: HashSet<String> = receiver
        .received()
        .iter()
        .filter_map(|r| r.header("webhook-id").map(str::to_owned))
        .collect();
    assert_eq!(delivered.len(), EVENTS, "every event arrived");
    // At least one request per event plus the killed process's attempts that reached the
    // receiver (at-least-once: an attempt that timed out while held is sent again).
    assert!(receiver.received().len() >= EVENTS + stranded);
    app.stop().await;
}
