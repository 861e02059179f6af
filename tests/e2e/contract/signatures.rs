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
}
