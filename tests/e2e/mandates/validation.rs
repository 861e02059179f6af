//! Mandate requests that must be refused — malformed, invalid, of a field that cannot change,
//! from a live key where the sandbox is needed — and change nothing; defaults; idempotency.

use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::{TestApp, error, json};
use reqwest::Method;
use serde_json::{Value, json};

use super::{call, create, mandate_body, merchant_app, phone, put, read};

pub async fn bad_requests_are_refused_and_change_nothing(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let recipient = phone();
    let post = |body: Value| {
        let app = &app;
        let application = &application;
        async move {
            call(
                app,
                application,
                Method::POST,
                "/v1/service/mandates",
                Some(&body),
            )
            .await
        }
    };
    // Malformed or missing required fields → 400.
    for body in [
        json!({"recipient": recipient, "type": "direct_debit"}),
        json!({"recipient": recipient, "type": "direct_debit", "description": 5}),
        json!({"type": "direct_debit", "description": "x"}),
    ] {
        error(post(body).await, 400, "bad_request").await;
    }
    // Well-formed but invalid values → 422, naming the field.
    let long = "x".repeat(501);
    for (field, value) in [
        ("amount", json!(0)),
        ("amount", json!(-5)),
        ("amount", json!(1.001)),
        ("currency", json!("eur")),
        ("frequency", json!("hourly")),
        ("type", json!("cheque")),
        ("recipient", json!("5551234567")),
        ("recipient", json!("not-an-email@")),
        ("description", json!("")),
        ("description", json!(long)),
        ("description", json!("Gym\u{202e}pihsrebmem")),
        ("callbackUrl", json!("not a url")),
    ] {
        let mut body = mandate_body(&recipient);
        body[field] = value;
        let refused = error(post(body).await, 422, "validation_error").await;
        assert_eq!(refused["details"][0]["field"], field, "{refused}");
    }
    let mut yen = mandate_body(&recipient);
    yen["currency"] = json!("JPY");
    yen["amount"] = json!(10.5);
    error(post(yen).await, 422, "validation_error").await;

    // The defaults: USD, no amount, no frequency; an email recipient gets a hosted page.
    let minimal = create(
        &app,
        &application,
        &json!({"recipient": "ann@example.com", "type": "authorization", "description": "Card on file"}),
    )
    .await;
    assert_eq!(minimal["currency"], "USD");
    assert_eq!(minimal["amount"], Value::Null);
    assert_eq!(minimal["frequency"], Value::Null);
    let id = minimal["id"].as_str().unwrap().to_owned();
    assert!(
        minimal["approvalUrl"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/mandates/{id}")),
        "{minimal}"
    );

    // PUT: fields that cannot change, invalid values, nothing to change → 422, nothing stored.
    for body in [
        json!({"recipient": "+15550000000"}),
        json!({"type": "direct_debit"}),
        json!({"amount": 0}),
        json!({"frequency": "hourly"}),
        json!({}),
    ] {
        error(
            put(&app, &application, &id, &body).await,
            422,
            "validation_error",
        )
        .await;
    }
    error(
        put(&app, &application, &id, &json!({"amount": "ten"})).await,
        400,
        "bad_request",
    )
    .await;
    let unchanged = read(&app, &application, &id).await;
    assert_eq!(unchanged["updatedAt"], minimal["updatedAt"]);
    assert_eq!(unchanged["amount"], Value::Null);
    for unknown in ["md_01JAAAAAAAAAAAAAAAAAAAAAAA", "cs_1", "../etc"] {
        let path = format!("/v1/service/mandates/{unknown}");
        error(
            call(&app, &application, Method::GET, &path, None).await,
            404,
            "not_found",
        )
        .await;
    }

    // Live keys: an unenrolled phone is 404, the sandbox helpers are 403.
    let (_, live_application, live_key) = app.live_merchant().await;
    let body = serde_json::to_vec(&mandate_body(&phone())).unwrap();
    let live_post = app
        .signed(
            Method::POST,
            "/v1/service/mandates",
            &live_key,
            &live_application.secret,
            &body,
        )
        .send()
        .await
        .unwrap();
    error(live_post, 404, "not_found").await;
    let helper = app
        .signed(
            Method::POST,
            &format!("/v1/sandbox/mandates/{id}/approve"),
            &live_key,
            &live_application.secret,
            b"{}",
        )
        .send()
        .await
        .unwrap();
    error(helper, 403, "forbidden").await;

    // Idempotency: the same key and body replay the stored answer; another body is 409.
    let keyed = |body: &Value| {
        let bytes = serde_json::to_vec(body).unwrap();
        app.signed(
            Method::POST,
            "/v1/service/mandates",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .header("idempotency-key", "mandate-42")
        .send()
    };
    let first = keyed(&mandate_body(&recipient)).await.unwrap();
    let first = json(first, 200).await;
    let again = keyed(&mandate_body(&recipient)).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again, 200).await["data"]["id"], first["data"]["id"]);
    let other = keyed(&mandate_body(&phone())).await.unwrap();
    error(other, 409, "conflict").await;
    app.stop().await;
}
