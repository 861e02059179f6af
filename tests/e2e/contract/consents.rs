//! Consent sessions in sandbox, their events and the webhook delivery log.

use std::time::Duration;

use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, json};
use reqwest::{Method, Response};
use serde_json::{Value, json};

use super::Contract;

pub async fn signed(
    app: &TestApp,
    application: &Application,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let bytes = body
        .map(|body| serde_json::to_vec(body).unwrap())
        .unwrap_or_default();
    app.signed(
        method,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

pub fn consent_body(application: &Application, recipient: &str, callback: &str) -> Value {
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

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let recipient = "+15550001111";
    let body = consent_body(&application, recipient, &receiver.url);
    let create = || {
        signed(
            app,
            &application,
            Method::POST,
            "/v1/consents/auth",
            Some(&body),
        )
    };
    let application = &application;
    let read = |id: String| async move {
        signed(
            app,
            application,
            Method::GET,
            &format!("/v1/consents/auth/{id}"),
            None,
        )
        .await
    };

    let created = contract
        .response("POST /v1/consents/auth", "", create().await)
        .await;
    let approved_id = created["data"]["sessionId"].as_str().unwrap().to_owned();
    contract.event("", &receiver.event("consent.created", &approved_id).await);
    contract
        .response(
            "GET /v1/consents/auth/{sessionId}",
            "pending",
            read(approved_id.clone()).await,
        )
        .await;
    contract
        .response(
            "POST /v1/sandbox/consents/{sessionId}/approve",
            "",
            signed(
                app,
                application,
                Method::POST,
                &format!("/v1/sandbox/consents/{approved_id}/approve"),
                None,
            )
            .await,
        )
        .await;
    contract.event("", &receiver.event("consent.approved", &approved_id).await);
    contract
        .response(
            "GET /v1/consents/auth/{sessionId}",
            "approved",
            read(approved_id.clone()).await,
        )
        .await;

    let rejected = json(create().await, 201).await;
    let rejected_id = rejected["data"]["sessionId"].as_str().unwrap().to_owned();
    contract
        .response(
            "POST /v1/sandbox/consents/{sessionId}/reject",
            "",
            signed(
                app,
                application,
                Method::POST,
                &format!("/v1/sandbox/consents/{rejected_id}/reject"),
                None,
            )
            .await,
        )
        .await;
    contract.event("", &receiver.event("consent.rejected", &rejected_id).await);

    let mut invalid = body.clone();
    invalid["transaction"]["amount"] = json!(1.234);
    invalid["callbackUrl"] = json!("not a url");
    contract
        .response(
            "POST /v1/consents/auth",
            "invalid values",
            signed(
                app,
                application,
                Method::POST,
                "/v1/consents/auth",
                Some(&invalid),
            )
            .await,
        )
        .await;
    contract
        .response(
            "GET /v1/consents/auth/{sessionId}",
            "unknown",
            read("cs_unknown".into()).await,
        )
        .await;

    // Expiry, reported without anyone asking.
    let expiring = json(create().await, 201).await;
    let expiring_id = expiring["data"]["sessionId"].as_str().unwrap().to_owned();
    app.advance(Duration::from_secs(301));
    contract.event("", &receiver.event("consent.expired", &expiring_id).await);
    contract
        .response(
            "GET /v1/consents/auth/{sessionId}",
            "expired",
            read(expiring_id.clone()).await,
        )
        .await;

    // The delivery log: the newest delivery (consent.expired), once delivered.
    let newest = || {
        signed(
            app,
            application,
            Method::GET,
            "/v1/webhooks/deliveries?limit=1",
            None,
        )
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let page = json(newest().await, 200).await;
        if page["data"]["deliveries"][0]["status"] == "succeeded" {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the delivery did not succeed in time: {page}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let page = contract
        .response("GET /v1/webhooks/deliveries", "newest", newest().await)
        .await;
    let delivery = page["data"]["deliveries"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    contract
        .response(
            "POST /v1/webhooks/deliveries/{id}/retry",
            "",
            signed(
                app,
                application,
                Method::POST,
                &format!("/v1/webhooks/deliveries/{delivery}/retry"),
                None,
            )
            .await,
        )
        .await;
}
