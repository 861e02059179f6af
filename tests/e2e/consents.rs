//! Consent sessions, QR codes and webhooks (issue 4).

use std::time::Duration;

use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::{Application, unique};
use idconsent_e2e::{Backend, TestApp, error, json, on_both_backends};
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(
    a_session_is_created_approved_and_reported_by_signed_webhooks,
    a_rejection_is_reported_and_final,
    sessions_are_visible_only_to_their_application_and_environment,
    bad_requests_are_refused_with_the_right_status,
    a_recipient_cannot_be_flooded,
    idempotency_keys_replay_and_guard,
    the_qr_endpoint_serves_png_and_svg_while_pending,
    a_failing_receiver_gets_the_event_after_retries,
    a_delivery_can_be_sent_again,
);

fn consent_body(application: &Application, recipient: &str, callback: &str) -> Value {
    json!({
        "clientId": application.client_id,
        "recipient": recipient,
        "intent": "TRANSACTION",
        "callbackUrl": callback,
        "transaction": {
            "type": "payment",
            "description": "Order 42",
            "amount": 19.99,
            "currency": "EUR",
            "payee": "Example Shop"
        }
    })
}

fn phone() -> String {
    format!("+1555{}", &unique()[..7])
}

async fn create(app: &TestApp, application: &Application, key: &str, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(
        Method::POST,
        "/v1/consents/auth",
        key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

async fn session_of(app: &TestApp, application: &Application, key: &str, id: &str) -> Response {
    app.signed(
        Method::GET,
        &format!("/v1/consents/auth/{id}"),
        key,
        &application.secret,
        b"",
    )
    .send()
    .await
    .unwrap()
}

async fn sandbox(
    app: &TestApp,
    application: &Application,
    key: &str,
    id: &str,
    action: &str,
) -> Response {
    app.signed(
        Method::POST,
        &format!("/v1/sandbox/consents/{id}/{action}"),
        key,
        &application.secret,
        b"",
    )
    .send()
    .await
    .unwrap()
}

fn decode_qr(png: &[u8]) -> String {
    let image = image::load_from_memory(png).unwrap().to_luma8();
    let mut prepared = rqrr::PreparedImage::prepare(image);
    let grids = prepared.detect_grids();
    assert_eq!(grids.len(), 1);
    grids[0].decode().unwrap().1
}

async fn a_session_is_created_approved_and_reported_by_signed_webhooks(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let recipient = phone();
    let created = create(
        &app,
        &application,
        &application.sandbox_key,
        &consent_body(&application, &recipient, &receiver.url),
    )
    .await;
    let created = json(created, 201).await;
    assert_eq!(created["code"], 201);
    assert_eq!(created["data"]["status"], "pending");
    let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("cs_") && id.len() == 3 + 36);

    // The QR code decodes to the app's URI.
    let png = base64::Engine::decode(
        &base64::engine::general_purpose::STANDARD,
        created["data"]["qr"].as_str().unwrap(),
    )
    .unwrap();
    assert_eq!(decode_qr(&png), format!("idconsent://auth/{id}"));

    let shown = json(
        session_of(&app, &application, &application.sandbox_key, &id).await,
        200,
    )
    .await;
    assert_eq!(shown["data"]["status"], "pending");
    assert_eq!(shown["data"]["recipient"], recipient.as_str());
    assert_eq!(shown["data"]["transaction"]["amount"], 19.99);
    assert_eq!(shown["data"]["clientId"], application.client_id.as_str());
    assert_eq!(shown["data"]["decidedAt"], Value::Null);

    let approved = json(
        sandbox(&app, &application, &application.sandbox_key, &id, "approve").await,
        200,
    )
    .await;
    assert_eq!(approved["data"]["status"], "approved");

    let created_event = receiver.event("consent.created", &id).await;
    let approved_event = receiver.event("consent.approved", &id).await;
    for event in [&created_event, &approved_event] {
        assert!(
            event.verifies_with(&application.webhook_secret),
            "signature must verify"
        );
        assert!(!event.verifies_with("whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="));
        let body = event.json();
        assert_eq!(event.header("webhook-id"), body["id"].as_str());
        assert!(body["id"].as_str().unwrap().starts_with("evt_"));
        assert_eq!(event.header("content-type"), Some("application/json"));
    }
    let data = approved_event.json()["data"].clone();
    assert_eq!(data["status"], "approved");
    assert_eq!(data["recipient"], recipient.as_str());
    assert!(data["decidedAt"].as_str().unwrap().ends_with('Z'));

    // Final: a second decision is a conflict, and the QR image is gone.
    let again = sandbox(&app, &application, &application.sandbox_key, &id, "reject").await;
    error(again, 409, "conflict").await;
    let image = app.get(&format!("/v1/consents/qr/png/{id}")).await;
    error(image, 410, "gone").await;

    let deliveries = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    let deliveries = json(deliveries, 200).await;
    let listed = deliveries["data"]["deliveries"].as_array().unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["eventType"], "consent.approved", "newest first");
    assert!(
        listed
            .iter()
            .all(|d| d["status"] == "succeeded" || d["status"] == "pending")
    );
}

async fn a_rejection_is_reported_and_final(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let created = json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), &receiver.url),
        )
        .await,
        201,
    )
    .await;
    let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    json(
        sandbox(&app, &application, &application.sandbox_key, &id, "reject").await,
        200,
    )
    .await;
    let event = receiver.event("consent.rejected", &id).await;
    assert_eq!(event.json()["data"]["status"], "rejected");
    error(
        sandbox(&app, &application, &application.sandbox_key, &id, "approve").await,
        409,
        "conflict",
    )
    .await;
    let shown = json(
        session_of(&app, &application, &application.sandbox_key, &id).await,
        200,
    )
    .await;
    assert_eq!(shown["data"]["status"], "rejected");
}

async fn sessions_are_visible_only_to_their_application_and_environment(app: TestApp) {
    let (merchant, application, live_key) = app.live_merchant().await;
    let created = json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), "https://shop.example/hooks"),
        )
        .await,
        201,
    )
    .await;
    let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    // The same application's live key does not see sandbox data.
    error(
        session_of(&app, &application, &live_key, &id).await,
        404,
        "not_found",
    )
    .await;
    // Another application of the same merchant does not see it either.
    let created_other = app
        .create_application(
            &merchant,
            &json!({"name": "Other", "callbackUrl": "https://shop.example/other"}),
        )
        .await;
    let other = Application {
        id: created_other["application"]["id"].as_str().unwrap().into(),
        client_id: created_other["application"]["clientId"]
            .as_str()
            .unwrap()
            .into(),
        sandbox_key: created_other["application"]["credentials"]["sandbox"]["apiKey"]
            .as_str()
            .unwrap()
            .into(),
        secret: created_other["application"]["credentials"]["sandbox"]["secret"]
            .as_str()
            .unwrap()
            .into(),
        webhook_secret: created_other["application"]["webhookSecret"]
            .as_str()
            .unwrap()
            .into(),
    };
    error(
        session_of(&app, &other, &other.sandbox_key, &id).await,
        404,
        "not_found",
    )
    .await;
    error(
        session_of(&app, &application, &application.sandbox_key, "cs_nothing").await,
        404,
        "not_found",
    )
    .await;
    // Sandbox helpers refuse live keys.
    error(
        sandbox(&app, &application, &live_key, &id, "approve").await,
        403,
        "forbidden",
    )
    .await;
    // In live, the recipient must be enrolled; http callbacks are refused.
    let live = create(
        &app,
        &application,
        &live_key,
        &consent_body(&application, &phone(), "https://shop.example/hooks"),
    )
    .await;
    assert_eq!(
        error(live, 404, "not_found").await["message"],
        "Recipient is not enrolled"
    );
    let insecure = create(
        &app,
        &application,
        &live_key,
        &consent_body(&application, &phone(), "http://shop.example/hooks"),
    )
    .await;
    assert_eq!(
        error(insecure, 422, "validation_error").await["details"][0]["field"],
        "callbackUrl"
    );
}

async fn bad_requests_are_refused_with_the_right_status(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let other = app.application(&merchant).await;
    let key = application.sandbox_key.clone();

    let foreign_client = consent_body(&other, &phone(), "https://shop.example/hooks");
    error(
        create(&app, &application, &key, &foreign_client).await,
        403,
        "forbidden",
    )
    .await;

    let oauth_only = app
        .create_application(&merchant, &json!({"name": "OAuth only", "callbackUrl": "https://shop.example/h", "requestTypes": ["OAUTH"]}))
        .await;
    let oauth_app = Application {
        id: oauth_only["application"]["id"].as_str().unwrap().into(),
        client_id: oauth_only["application"]["clientId"]
            .as_str()
            .unwrap()
            .into(),
        sandbox_key: oauth_only["application"]["credentials"]["sandbox"]["apiKey"]
            .as_str()
            .unwrap()
            .into(),
        secret: oauth_only["application"]["credentials"]["sandbox"]["secret"]
            .as_str()
            .unwrap()
            .into(),
        webhook_secret: oauth_only["application"]["webhookSecret"]
            .as_str()
            .unwrap()
            .into(),
    };
    let not_enabled = consent_body(&oauth_app, &phone(), "https://shop.example/hooks");
    error(
        create(&app, &oauth_app, &oauth_app.sandbox_key, &not_enabled).await,
        403,
        "forbidden",
    )
    .await;

    let mut invalid = consent_body(&application, "555-1234", "ftp://shop.example");
    invalid["intent"] = json!("PAYMENT");
    invalid["transaction"]["amount"] = json!(10.555);
    invalid["transaction"]["currency"] = json!("EURO");
    invalid["transaction"]["payee"] = json!("");
    let refused = error(
        create(&app, &application, &key, &invalid).await,
        422,
        "validation_error",
    )
    .await;
    let fields: Vec<&str> = refused["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "recipient",
            "intent",
            "callbackUrl",
            "transaction.payee",
            "transaction.currency"
        ]
    );

    let mut precise = consent_body(&application, &phone(), "https://shop.example/hooks");
    precise["transaction"]["amount"] = json!(10.555);
    let refused = error(
        create(&app, &application, &key, &precise).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "transaction.amount");
    precise["transaction"]["amount"] = json!(-1);
    let refused = error(
        create(&app, &application, &key, &precise).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["message"], "must be >= 0");

    let mut wrong_type = consent_body(&application, &phone(), "https://shop.example/hooks");
    wrong_type["transaction"]["amount"] = json!("19.99");
    let refused = error(
        create(&app, &application, &key, &wrong_type).await,
        400,
        "bad_request",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "transaction.amount");
    let mut missing = consent_body(&application, &phone(), "https://shop.example/hooks");
    missing.as_object_mut().unwrap().remove("transaction");
    error(
        create(&app, &application, &key, &missing).await,
        400,
        "bad_request",
    )
    .await;

    let timestamp = idconsent_e2e::scenario::now_millis().to_string();
    let signature = idconsent_auth_hmac::sign_request(
        application.secret.as_bytes(),
        &key,
        &timestamp,
        b"clientId=x",
    );
    let not_json = app
        .client
        .post(app.url("/v1/consents/auth"))
        .header("x-api-key", &key)
        .header("x-timestamp", timestamp)
        .header("x-signature", signature)
        .header("content-type", "text/plain")
        .body("clientId=x")
        .send()
        .await
        .unwrap();
    error(not_json, 415, "unsupported_media_type").await;
}

async fn a_recipient_cannot_be_flooded(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let recipient = phone();
    for _ in 0..5 {
        json(
            create(
                &app,
                &application,
                &application.sandbox_key,
                &consent_body(&application, &recipient, "https://shop.example/hooks"),
            )
            .await,
            201,
        )
        .await;
    }
    let sixth = create(
        &app,
        &application,
        &application.sandbox_key,
        &consent_body(&application, &recipient, "https://shop.example/hooks"),
    )
    .await;
    let retry_after: u64 = sixth.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=300).contains(&retry_after), "{retry_after}");
    error(sixth, 429, "rate_limited").await;
    // Another recipient is not affected.
    json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), "https://shop.example/hooks"),
        )
        .await,
        201,
    )
    .await;
}

async fn idempotency_keys_replay_and_guard(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let body = serde_json::to_vec(&consent_body(
        &application,
        &phone(),
        "https://shop.example/hooks",
    ))
    .unwrap();
    let send = |bytes: Vec<u8>, key: &'static str| {
        app.signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .header("idempotency-key", key)
        .send()
    };
    let first = send(body.clone(), "order-42").await.unwrap();
    assert!(first.headers().get("idempotent-replayed").is_none());
    let first = json(first, 201).await;
    let again = send(body.clone(), "order-42").await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    let again = json(again, 201).await;
    assert_eq!(again, first, "the stored response, byte for byte");

    let mut other = consent_body(&application, &phone(), "https://shop.example/hooks");
    other["transaction"]["amount"] = json!(5);
    let reused = send(serde_json::to_vec(&other).unwrap(), "order-42")
        .await
        .unwrap();
    error(reused, 409, "conflict").await;
    let bad_key = app
        .signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &body,
        )
        .header("idempotency-key", "")
        .send()
        .await
        .unwrap();
    error(bad_key, 400, "bad_request").await;
    // A failed request does not burn its key.
    let mut invalid = consent_body(&application, "bogus", "https://shop.example/hooks");
    invalid["intent"] = json!("LOGIN");
    error(
        send(serde_json::to_vec(&invalid).unwrap(), "order-43")
            .await
            .unwrap(),
        422,
        "validation_error",
    )
    .await;
    json(send(body, "order-43").await.unwrap(), 201).await;
}

async fn the_qr_endpoint_serves_png_and_svg_while_pending(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let created = json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), "https://shop.example/hooks"),
        )
        .await,
        201,
    )
    .await;
    let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let png = app.get(&format!("/v1/consents/qr/png/{id}?size=512")).await;
    assert_eq!(png.status(), 200);
    assert_eq!(png.headers()["content-type"], "image/png");
    let bytes = png.bytes().await.unwrap();
    let image = image::load_from_memory(&bytes).unwrap();
    assert_eq!((image.width(), image.height()), (512, 512));
    assert_eq!(decode_qr(&bytes), format!("idconsent://auth/{id}"));
    let svg = app.get(&format!("/v1/consents/qr/svg/{id}")).await;
    assert_eq!(svg.headers()["content-type"], "image/svg+xml");
    assert!(svg.text().await.unwrap().starts_with("<svg"));
    error(
        app.get(&format!("/v1/consents/qr/gif/{id}")).await,
        422,
        "validation_error",
    )
    .await;
    error(
        app.get(&format!("/v1/consents/qr/png/{id}?size=10")).await,
        422,
        "validation_error",
    )
    .await;
    error(
        app.get(&format!("/v1/consents/qr/png/{id}?size=big")).await,
        400,
        "bad_request",
    )
    .await;
    error(
        app.get("/v1/consents/qr/png/cs_01JDKXA1B2C3D4E5F6G7H8J9K0")
            .await,
        404,
        "not_found",
    )
    .await;
}

async fn a_failing_receiver_gets_the_event_after_retries(app: TestApp) {
    let receiver = Receiver::scripted(&[500, 500, 500]).await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let created = json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), &receiver.url),
        )
        .await,
        201,
    )
    .await;
    let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let delivered = receiver
        .wait_for(|received| {
            let attempts: Vec<_> = received
                .iter()
                .filter(|r| r.json()["data"]["sessionId"] == id.as_str())
                .collect();
            (attempts.len() == 4).then(|| {
                attempts
                    .iter()
                    .map(|r| r.header("webhook-id").unwrap().to_owned())
                    .collect::<Vec<_>>()
            })
        })
        .await;
    assert!(
        delivered.windows(2).all(|pair| pair[0] == pair[1]),
        "a redelivery keeps its webhook-id"
    );
    let delivery = wait_for_delivery(&app, &application, |d| d["status"] == "succeeded").await;
    let codes: Vec<Value> = delivery["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["statusCode"].clone())
        .collect();
    assert_eq!(codes, [json!(500), json!(500), json!(500), json!(200)]);
    assert!(delivery["attempts"][0].get("error").is_none());
    assert_eq!(delivery["nextAttemptAt"], Value::Null);
    let pending = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries?status=pending",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(json(pending, 200).await["data"]["pagination"]["total"], 0);
    error(
        app.signed(
            Method::GET,
            "/v1/webhooks/deliveries?status=lost",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap(),
        422,
        "validation_error",
    )
    .await;
}

async fn wait_for_delivery(
    app: &TestApp,
    application: &Application,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let listed = app
            .signed(
                Method::GET,
                "/v1/webhooks/deliveries",
                &application.sandbox_key,
                &application.secret,
                b"",
            )
            .send()
            .await
            .unwrap();
        let listed = json(listed, 200).await;
        if let Some(found) = listed["data"]["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| done(d))
        {
            return found.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "delivery not done: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_delivery_can_be_sent_again(app: TestApp) {
    // Every attempt fails: after the schedule the delivery is failed, with a network error.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}/hooks", closed.local_addr().unwrap());
    drop(closed);
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    json(
        create(
            &app,
            &application,
            &application.sandbox_key,
            &consent_body(&application, &phone(), &dead_url),
        )
        .await,
        201,
    )
    .await;
    let failed = wait_for_delivery(&app, &application, |d| d["status"] == "failed").await;
    assert_eq!(
        failed["attempts"].as_array().unwrap().len(),
        5,
        "one attempt plus the four of the test schedule"
    );
    assert_eq!(failed["attempts"][0]["statusCode"], Value::Null);
    assert!(
        failed["attempts"][0]["error"]
            .as_str()
            .unwrap()
            .contains("connection")
    );
    let id = failed["id"].as_str().unwrap();
    let retried = app
        .signed(
            Method::POST,
            &format!("/v1/webhooks/deliveries/{id}/retry"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        json(retried, 202).await["data"]["delivery"]["status"],
        "pending"
    );
    wait_for_delivery(&app, &application, |d| {
        d["id"] == id && d["attempts"].as_array().unwrap().len() > 5
    })
    .await;
    let unknown = app
        .signed(
            Method::POST,
            "/v1/webhooks/deliveries/whd_nothing/retry",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    error(unknown, 404, "not_found").await;
}

mod expiry {
    use super::*;

    async fn a_session_expires_on_time_without_any_read(backend: Backend) {
        let Some(app) = TestApp::start(backend).await else {
            return;
        };
        let receiver = Receiver::start().await;
        let merchant = app.register_merchant().await;
        let application = app.application(&merchant).await;
        let created = json(
            create(
                &app,
                &application,
                &application.sandbox_key,
                &consent_body(&application, &phone(), &receiver.url),
            )
            .await,
            201,
        )
        .await;
        let id = created["data"]["sessionId"].as_str().unwrap().to_owned();
        // A second before its five minutes are up, it is still pending.
        app.advance(Duration::from_secs(299));
        let shown = json(
            session_of(&app, &application, &application.sandbox_key, &id).await,
            200,
        )
        .await;
        assert_eq!(shown["data"]["status"], "pending");
        // Past them, the sweeper expires it without anyone reading it, at its next poll.
        app.advance(Duration::from_secs(2));
        let started = std::time::Instant::now();
        let expired = receiver.event("consent.expired", &id).await;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "expired within a few polls of its time"
        );
        assert_eq!(expired.json()["data"]["status"], "expired");
        let shown = json(
            session_of(&app, &application, &application.sandbox_key, &id).await,
            200,
        )
        .await;
        assert_eq!(shown["data"]["status"], "expired");
        error(
            sandbox(&app, &application, &application.sandbox_key, &id, "approve").await,
            409,
            "conflict",
        )
        .await;
        app.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        a_session_expires_on_time_without_any_read(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        a_session_expires_on_time_without_any_read(Backend::Postgres).await;
    }
}
