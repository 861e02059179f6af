//! QR code operations: generate, status.

use idconsent_e2e::TestApp;
use idconsent_e2e::receiver::Receiver;
use reqwest::Method;
use serde_json::json;

use super::Contract;
use super::consents::signed;

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let body = json!({"data": "https://shop.example/t/42", "format": "svg", "size": 128, "errorCorrection": "Q", "expiresIn": 600});
    let generated = contract
        .response(
            "POST /v1/qr/generate",
            "",
            signed(
                app,
                &application,
                Method::POST,
                "/v1/qr/generate",
                Some(&body),
            )
            .await,
        )
        .await;
    let id = generated["data"]["id"].as_str().unwrap();
    contract
        .response(
            "GET /v1/qr/{id}",
            "",
            signed(
                app,
                &application,
                Method::GET,
                &format!("/v1/qr/{id}"),
                None,
            )
            .await,
        )
        .await;
}
