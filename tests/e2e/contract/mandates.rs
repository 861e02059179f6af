//! Mandates: create, read, list, change, cancel, the sandbox helpers, `mandate.signed`, and the
//! hosted page's JSON steps for an email recipient.

use idconsent_e2e::TestApp;
use idconsent_e2e::hosted::PageVisitor;
use idconsent_e2e::receiver::Receiver;
use reqwest::Method;
use serde_json::{Value, json};

use super::Contract;
use super::consents::signed;

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let body = json!({
        "recipient": "+15550100042", "type": "direct_debit", "amount": 49.9,
        "currency": "EUR", "frequency": "monthly", "description": "Gym membership"
    });
    let call = async |method: Method, path: &str, body: Option<&Value>| {
        signed(app, &application, method, path, body).await
    };
    let created = contract
        .response(
            "POST /v1/service/mandates",
            "",
            call(Method::POST, "/v1/service/mandates", Some(&body)).await,
        )
        .await;
    let id = created["data"]["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/service/mandates/{id}");
    contract
        .response(
            "POST /v1/sandbox/mandates/{id}/approve",
            "",
            call(
                Method::POST,
                &format!("/v1/sandbox/mandates/{id}/approve"),
                Some(&json!({})),
            )
            .await,
        )
        .await;
    let signed_event = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "mandate.signed")
                .cloned()
        })
        .await;
    contract.event("", &signed_event);
    contract
        .response(
            "PUT /v1/service/mandates/{id}",
            "new terms",
            call(Method::PUT, &path, Some(&json!({"amount": 75}))).await,
        )
        .await;
    contract
        .response(
            "GET /v1/service/mandates/{id}",
            "",
            call(Method::GET, &path, None).await,
        )
        .await;
    contract
        .response(
            "GET /v1/service/mandates",
            "",
            call(Method::GET, "/v1/service/mandates?status=pending", None).await,
        )
        .await;
    contract
        .response(
            "DELETE /v1/service/mandates/{id}",
            "",
            call(Method::DELETE, &path, None).await,
        )
        .await;
    let declined = call(Method::POST, "/v1/service/mandates", Some(&body)).await;
    let declined = contract
        .response("POST /v1/service/mandates", "", declined)
        .await;
    let declined = declined["data"]["id"].as_str().unwrap().to_owned();
    contract
        .response(
            "POST /v1/sandbox/mandates/{id}/reject",
            "",
            call(
                Method::POST,
                &format!("/v1/sandbox/mandates/{declined}/reject"),
                Some(&json!({})),
            )
            .await,
        )
        .await;

    // An email recipient at the hosted page: at the mandate's URL, and at the page every kind has
    // (ADR 0040).
    for (route, url) in [
        ("/mandates/{id}", "/mandates/"),
        ("/approve/{kind}/{id}", "/approve/mandate/"),
    ] {
        let email = "ann@example.com";
        let created = call(
            Method::POST,
            "/v1/service/mandates",
            Some(&json!({"recipient": email, "type": "authorization", "description": "Card on file"})),
        )
        .await;
        let created = contract
            .response("POST /v1/service/mandates", "email recipient", created)
            .await;
        let page = format!("{url}{}", created["data"]["id"].as_str().unwrap());
        let mut visitor = PageVisitor::at(email, &page);
        contract
            .response(
                &format!("POST {route}/code"),
                "",
                visitor.post(app, "/code", &json!({})).await,
            )
            .await;
        let code = app.last_message(email).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        let confirmed = contract
            .response(
                &format!("POST {route}/code/verify"),
                "",
                visitor
                    .post(app, "/code/verify", &json!({"code": code}))
                    .await,
            )
            .await;
        let token = confirmed["data"]["token"].as_str().unwrap().to_owned();
        let options = contract
            .response(
                &format!("POST {route}/passkey/registration"),
                "",
                visitor
                    .post(app, "/passkey/registration", &json!({"token": token}))
                    .await,
            )
            .await;
        let created = visitor
            .passkey
            .register(
                idconsent_e2e::enduser::ORIGIN,
                &json!({"publicKey": options["data"]["publicKey"]}),
            )
            .unwrap();
        // A page that showed something else (its hash is not the mandate's now): 409, reload.
        contract
            .response(
                &format!("POST {route}/passkey/assertion"),
                "changed since the page was loaded",
                visitor
                    .post(
                        app,
                        "/passkey/assertion",
                        &json!({"token": token, "credential": created, "contextHash": "00".repeat(32)}),
                    )
                    .await,
            )
            .await;
        let step = contract
            .response(
                &format!("POST {route}/passkey/assertion"),
                "",
                visitor.assertion_step(app, &token, &created).await,
            )
            .await;
        let assertion = visitor.assert(&step["data"]);
        contract
            .response(
                &format!("POST {route}/decision"),
                "",
                visitor.decide(app, &token, "approve", &assertion).await,
            )
            .await;
    }
}
