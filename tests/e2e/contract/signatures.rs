//! Signature requests in sandbox and their `signature.completed` event.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::{TestApp, error};
use reqwest::Method;
use serde_json::json;

use super::Contract;
use super::consents::signed;

/// A one-page PDF, its xref offsets computed.
fn one_page_pdf() -> Vec<u8> {
    let objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] >>",
    ];
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend(format!("{} 0 obj\n{object}\nendobj\n", index + 1).as_bytes());
    }
    let xref = out.len();
    out.extend(b"xref\n0 4\n0000000000 65535 f \n");
    for offset in offsets {
        out.extend(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend(
        format!("trailer\n<< /Size 4 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes(),
    );
    out
}

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let body = json!({
        "document": BASE64.encode(one_page_pdf()),
        "signers": [
            {"email": "ann@example.com", "name": "Ann Lee"},
            {"email": "bo@example.com", "name": "Bo Berg"}
        ],
        "expiresIn": 24
    });
    let created = contract
        .response(
            "POST /v1/signature/documents",
            "",
            signed(
                app,
                &application,
                Method::POST,
                "/v1/signature/documents",
                Some(&body),
            )
            .await,
        )
        .await;
    let id = created["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/v1/signature/documents/{id}");
    contract
        .response(
            "GET /v1/signature/documents/{signatureRequestId}",
            "pending",
            signed(app, &application, Method::GET, &path, None).await,
        )
        .await;
    let early = error(
        signed(
            app,
            &application,
            Method::GET,
            &format!("{path}/certificate"),
            None,
        )
        .await,
        409,
        "conflict",
    )
    .await;
    contract.body(
        "GET /v1/signature/documents/{signatureRequestId}/certificate",
        409,
        "",
        &early,
    );
    let sign_path = format!("/v1/sandbox/signature/documents/{id}/sign");
    for (email, variant) in [
        ("ann@example.com", "first signer"),
        ("bo@example.com", "last signer"),
    ] {
        contract
            .response(
                "POST /v1/sandbox/signature/documents/{signatureRequestId}/sign",
                variant,
                signed(
                    app,
                    &application,
                    Method::POST,
                    &sign_path,
                    Some(&json!({"email": email})),
                )
                .await,
            )
            .await;
    }
    let completed = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "signature.completed")
                .cloned()
        })
        .await;
    contract.event("", &completed);

    // The hosted signing page's steps, for a second request's one signer.
    let mut page_body = body.clone();
    page_body["signers"] = json!([{"email": "cy@example.com", "name": "Cy Dee"}]);
    let created = signed(
        app,
        &application,
        Method::POST,
        "/v1/signature/documents",
        Some(&page_body),
    )
    .await;
    let id = idconsent_e2e::json(created, 201).await["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = format!("/sign/{id}");
    let rendered = app.get(&page).await.text().await.unwrap();
    let shown = idconsent_e2e::hosted::rendered_hash(&rendered).unwrap();
    let step = |path: &str, extra: serde_json::Value| {
        let mut body = json!({"email": "cy@example.com"});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        let url = format!("{page}{path}");
        async move { app.post_json(&url, &body).await }
    };
    contract
        .response("POST /sign/{id}/code", "", step("/code", json!({})).await)
        .await;
    let code = app.last_message("cy@example.com").await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let confirmed = contract
        .response(
            "POST /sign/{id}/code/verify",
            "",
            step("/code/verify", json!({"code": code})).await,
        )
        .await;
    let token = confirmed["data"]["token"].as_str().unwrap().to_owned();
    let options = contract
        .response(
            "POST /sign/{id}/passkey/registration",
            "",
            step("/passkey/registration", json!({"token": token})).await,
        )
        .await;
    let mut passkey = idconsent_passkey_soft::SoftPasskey::new().unwrap();
    let origin = idconsent_e2e::enduser::ORIGIN;
    let credential = passkey
        .register(origin, &json!({"publicKey": options["data"]["publicKey"]}))
        .unwrap();
    let started = contract
        .response(
            "POST /sign/{id}/passkey/assertion",
            "",
            step(
                "/passkey/assertion",
                json!({"token": token, "credential": credential, "contextHash": shown}),
            )
            .await,
        )
        .await;
    let assertion = passkey
        .authenticate(origin, &json!({"publicKey": started["data"]["publicKey"]}))
        .unwrap();
    contract
        .response(
            "POST /sign/{id}/decision",
            "",
            step(
                "/decision",
                json!({
                    "token": token, "decision": "approve", "credential": assertion,
                    "contextHash": shown
                }),
            )
            .await,
        )
        .await;
}
