//! Billing: the operator's plan, usage, closing a month, invoices, marking one paid. Walked
//! last: it moves the clock into next month.

use std::time::Duration;

use idconsent_e2e::{TestApp, json};
use idconsent_kernel::{Timestamp, UsagePeriod};
use reqwest::Method;
use serde_json::json;

use super::Contract;
use super::consents::signed;

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    contract
        .response(
            "POST /v1/admin/merchants/{id}/plan",
            "",
            app.as_operator(
                Method::POST,
                &format!("/v1/admin/merchants/{}/plan", merchant.id),
            )
            .json(&json!({"plan": "basic"}))
            .send()
            .await
            .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/service/billings/usage",
            "",
            signed(
                app,
                &application,
                Method::GET,
                "/v1/service/billings/usage",
                None,
            )
            .await,
        )
        .await;
    contract
        .response(
            "GET /v1/merchants/billing/usage",
            "",
            app.as_merchant(Method::GET, "/v1/merchants/billing/usage", &merchant.token)
                .send()
                .await
                .unwrap(),
        )
        .await;

    let now = app.now_millis();
    let period = UsagePeriod::of(Timestamp::from_millis(now));
    let into_next = u64::try_from(period.next().starts_at().as_millis() - now).unwrap();
    app.advance(Duration::from_millis(into_next + 60_000));
    // The scheduler closes the month by itself; the operator closing it again issues nothing.
    let mut invoices = serde_json::Value::Null;
    for _ in 0..100 {
        let response = signed(app, &application, Method::GET, "/v1/service/billings", None).await;
        invoices = json(response, 200).await;
        if invoices["data"]["pagination"]["total"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(invoices["data"]["pagination"]["total"], 1, "{invoices}");
    let closed = app
        .as_operator(Method::POST, "/v1/admin/billing/close-period")
        .json(&json!({"period": period.to_string()}))
        .send()
        .await
        .unwrap();
    contract
        .response("POST /v1/admin/billing/close-period", "", closed)
        .await;
    let invoices = contract
        .response(
            "GET /v1/service/billings",
            "",
            signed(app, &application, Method::GET, "/v1/service/billings", None).await,
        )
        .await;
    // A month later the session token has expired: sign in again.
    let login = app
        .post_json(
            "/v1/merchants/login",
            &json!({"email": merchant.email, "password": "correct horse battery staple"}),
        )
        .await;
    let token = json(login, 200).await["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    contract
        .response(
            "GET /v1/merchants/billing/invoices",
            "",
            app.as_merchant(Method::GET, "/v1/merchants/billing/invoices", &token)
                .send()
                .await
                .unwrap(),
        )
        .await;
    let id = invoices["data"]["invoices"][0]["id"].as_str().unwrap();
    contract
        .response(
            "POST /v1/admin/invoices/{id}/mark-paid",
            "",
            app.as_operator(Method::POST, &format!("/v1/admin/invoices/{id}/mark-paid"))
                .send()
                .await
                .unwrap(),
        )
        .await;
}
