//! Signature requests: creation, validation, the sandbox helper, completion with its webhook,
//! the certificate, expiry and tenancy (issue 15).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::{Method, Response};
use serde_json::{Value, json};

mod documents;
mod hostile;
mod page;
mod timestamps;
mod validation;

use documents::{flipped_positions, pdf, pdfsig, pdftotext, pyhanko};
use hostile::hostile_pdfs_are_refused_quickly_while_others_are_served;
use page::{
    a_signer_declines_and_biometrics_can_be_waived,
    concurrent_guesses_in_any_spelling_count_against_one_signer,
    every_spelling_of_a_signer_shares_one_lock, signers_sign_on_the_hosted_page_with_a_passkey,
    the_signing_page_answers_only_for_what_it_rendered,
    wrong_codes_over_resends_and_spellings_are_counted_ten_a_day,
};
use validation::{
    a_document_over_20_mib_is_refused_with_413, bad_documents_and_signers_are_refused,
};

on_both_backends!(
    a_request_is_signed_by_everyone_completed_and_reported,
    bad_documents_and_signers_are_refused,
    a_document_over_20_mib_is_refused_with_413,
    requests_are_visible_only_to_their_application_and_environment,
    a_request_expires_when_its_time_is_up,
    concurrent_last_signatures_complete_once,
    a_create_is_idempotent,
    signers_sign_on_the_hosted_page_with_a_passkey,
    a_signer_declines_and_biometrics_can_be_waived,
    every_spelling_of_a_signer_shares_one_lock,
    wrong_codes_over_resends_and_spellings_are_counted_ten_a_day,
    concurrent_guesses_in_any_spelling_count_against_one_signer,
    the_signing_page_answers_only_for_what_it_rendered,
    hostile_pdfs_are_refused_quickly_while_others_are_served,
);

pub(super) fn body(document: &[u8], signers: &[(&str, &str)]) -> Value {
    json!({
        "document": BASE64.encode(document),
        "signers": signers
            .iter()
            .map(|(email, name)| json!({"email": email, "name": name}))
            .collect::<Vec<_>>(),
    })
}

pub(super) async fn create(
    app: &TestApp,
    application: &Application,
    key: &str,
    body: &Value,
) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(
        Method::POST,
        "/v1/signature/documents",
        key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

async fn read(app: &TestApp, application: &Application, key: &str, path: &str) -> Response {
    app.signed(Method::GET, path, key, &application.secret, b"")
        .send()
        .await
        .unwrap()
}

async fn sign_as(
    app: &TestApp,
    application: &Application,
    key: &str,
    id: &str,
    email: &str,
) -> Response {
    let bytes = serde_json::to_vec(&json!({ "email": email })).unwrap();
    app.signed(
        Method::POST,
        &format!("/v1/sandbox/signature/documents/{id}/sign"),
        key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

async fn created_id(app: &TestApp, application: &Application, body: &Value) -> String {
    let created = json(
        create(app, application, &application.sandbox_key, body).await,
        201,
    )
    .await;
    created["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn a_request_is_signed_by_everyone_completed_and_reported(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let document = pdf(2, "");
    let mut request = body(
        &document,
        &[
            ("ann@example.com", "Ann Lee"),
            ("zoe@example.com", "Zoë Łukasz"),
            ("zoya@example.com", "Зоя Петрова"),
        ],
    );
    request["callbackUrl"] = json!(receiver.url);
    let created = json(create(&app, &application, &key, &request).await, 201).await;
    assert_eq!(created["code"], 201);
    let data = &created["data"];
    let id = data["signatureRequestId"].as_str().unwrap().to_owned();
    assert!(id.starts_with("sr_") && id.len() == 3 + 36, "{id}");
    assert_eq!(data["status"], "pending");
    let signers = data["signers"].as_array().unwrap();
    assert_eq!(signers.len(), 3);
    for signer in signers {
        assert_eq!(signer["status"], "awaiting_signature");
        assert!(
            signer["signUrl"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/sign/{id}")),
            "{signer}"
        );
    }
    assert_eq!(signers[1]["name"], "Zoë Łukasz");
    let expires_at = data["expiresAt"].as_str().unwrap();
    let expires_ms = idconsent_kernel::Timestamp::parse_rfc3339(expires_at)
        .unwrap()
        .as_millis();
    let expected = idconsent_e2e::scenario::now_millis() + 72 * 3600 * 1000;
    assert!((expires_ms - expected).abs() < 60_000, "{expires_at}");

    let path = format!("/v1/signature/documents/{id}");
    let certificate_path = format!("{path}/certificate");
    error(
        read(&app, &application, &key, &certificate_path).await,
        409,
        "conflict",
    )
    .await;

    let first = json(
        sign_as(&app, &application, &key, &id, "ann@example.com").await,
        200,
    )
    .await;
    assert_eq!(first["data"]["status"], "pending");
    assert_eq!(first["data"]["signers"][0]["status"], "signed");
    assert!(first["data"]["signers"][0]["signedAt"].is_string());
    assert_eq!(first["data"]["signers"][0]["biometricVerified"], false);
    assert_eq!(first["data"]["signers"][1]["status"], "awaiting_signature");
    error(
        sign_as(&app, &application, &key, &id, "ann@example.com").await,
        409,
        "conflict",
    )
    .await;
    error(
        sign_as(&app, &application, &key, &id, "eve@example.com").await,
        404,
        "not_found",
    )
    .await;
    error(
        read(&app, &application, &key, &certificate_path).await,
        409,
        "conflict",
    )
    .await;

    json(
        sign_as(&app, &application, &key, &id, "zoya@example.com").await,
        200,
    )
    .await;
    let completed = json(
        sign_as(&app, &application, &key, &id, "zoe@example.com").await,
        200,
    )
    .await;
    assert_eq!(completed["data"]["status"], "completed");
    assert!(completed["data"]["completedAt"].is_string());

    let event = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == "signature.completed"
                        && r.json()["data"]["signatureRequestId"] == id.as_str()
                })
                .cloned()
        })
        .await;
    assert!(event.verifies_with(&application.webhook_secret));
    let event_data = event.json()["data"].clone();
    assert_eq!(event_data["signatureRequestId"], id.as_str());
    assert_eq!(event_data["status"], "completed");
    assert_eq!(event_data["signers"][1]["status"], "signed");

    let shown = json(read(&app, &application, &key, &path).await, 200).await;
    assert_eq!(shown["data"]["status"], "completed");
    assert_eq!(
        shown["data"]["completedAt"],
        completed["data"]["completedAt"]
    );
    error(
        sign_as(&app, &application, &key, &id, "zoe@example.com").await,
        409,
        "conflict",
    )
    .await;

    let certificate = read(&app, &application, &key, &certificate_path).await;
    assert_eq!(certificate.status(), 200);
    assert_eq!(
        certificate.headers()["content-type"].to_str().unwrap(),
        "application/pdf"
    );
    assert!(
        certificate.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains(&format!("{id}-certificate.pdf"))
    );
    let signed = certificate.bytes().await.unwrap();
    assert!(signed.len() > document.len());
    assert_eq!(
        &signed[..document.len()],
        &document[..],
        "the upload stays a prefix"
    );
    // The audit page prints every signer's name, beyond Latin-1 too (an embedded font).
    if let Some(text) = pdftotext(&signed) {
        for expected in [
            "Signature audit trail",
            "Ann Lee <ann@example.com>",
            "Zoë Łukasz",
            "Зоя",
        ] {
            assert!(text.contains(expected), "{expected} missing from: {text}");
        }
        assert!(text.contains(&format!("Request: {id}")), "{text}");
        assert!(text.contains("passkey"), "{text}");
    }
    // Standard validators accept it, and a copy with one byte flipped fails.
    let report = pdfsig(&signed);
    if let Some(report) = report {
        assert!(
            report.contains("Signature Validation: Signature is Valid."),
            "{report}"
        );
        assert!(report.contains("Total document signed"), "{report}");
        assert!(report.contains("ETSI.CAdES.detached"), "{report}");
        for at in flipped_positions(&document, &signed) {
            let mut tampered = signed.to_vec();
            tampered[at] ^= 0x01;
            let report = pdfsig(&tampered).unwrap_or_default();
            assert!(
                !report.contains("Signature is Valid."),
                "flipped byte {at}: {report}"
            );
        }
    }
    let trusted = app.data_dir().join("signing-cert.pem");
    if let Some(report) = pyhanko(&signed, &trusted) {
        assert!(report.0, "pyHanko refused the certificate: {}", report.1);
        for line in [
            "The signer's certificate is trusted.",
            "The signature is cryptographically sound.",
            "The signature covers the entire file.",
            "The signature is judged VALID.",
        ] {
            assert!(report.1.contains(line), "{line}: {}", report.1);
        }
        for at in flipped_positions(&document, &signed) {
            let mut tampered = signed.to_vec();
            tampered[at] ^= 0x01;
            let report = pyhanko(&tampered, &trusted).unwrap_or((false, String::new()));
            assert!(
                !report.0 || !report.1.contains("judged VALID"),
                "flipped byte {at}: {}",
                report.1
            );
        }
    }
    // Downloaded again, the same certificate.
    let again = read(&app, &application, &key, &certificate_path).await;
    assert_eq!(again.bytes().await.unwrap(), signed);
}

async fn requests_are_visible_only_to_their_application_and_environment(app: TestApp) {
    let (merchant, application, live_key) = app.live_merchant().await;
    let id = created_id(
        &app,
        &application,
        &body(&pdf(1, ""), &[("ann@example.com", "Ann")]),
    )
    .await;
    let path = format!("/v1/signature/documents/{id}");
    let other = app
        .application_calling(&merchant, "https://shop.example/other")
        .await;
    let second_merchant = app.register_merchant().await;
    let stranger = app.application(&second_merchant).await;
    for (who, key) in [
        (&other, other.sandbox_key.clone()),
        (&stranger, stranger.sandbox_key.clone()),
        (&application, live_key.clone()),
    ] {
        error(read(&app, who, &key, &path).await, 404, "not_found").await;
        error(
            read(&app, who, &key, &format!("{path}/certificate")).await,
            404,
            "not_found",
        )
        .await;
    }
    for (who, key) in [
        (&other, other.sandbox_key.clone()),
        (&stranger, stranger.sandbox_key.clone()),
    ] {
        error(
            sign_as(&app, who, &key, &id, "ann@example.com").await,
            404,
            "not_found",
        )
        .await;
    }
    // The sandbox helper refuses live keys, whatever the request.
    error(
        sign_as(&app, &application, &live_key, &id, "ann@example.com").await,
        403,
        "forbidden",
    )
    .await;
    error(
        read(
            &app,
            &application,
            &application.sandbox_key,
            "/v1/signature/documents/sr_nothing",
        )
        .await,
        404,
        "not_found",
    )
    .await;
    // Still pending: nobody else's attempt changed it.
    let shown = json(
        read(&app, &application, &application.sandbox_key, &path).await,
        200,
    )
    .await;
    assert_eq!(shown["data"]["status"], "pending");
    assert_eq!(shown["data"]["signers"][0]["status"], "awaiting_signature");
}

async fn a_request_expires_when_its_time_is_up(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let mut request = body(
        &pdf(1, ""),
        &[("ann@example.com", "Ann"), ("bo@example.com", "Bo")],
    );
    request["expiresIn"] = json!(1);
    let id = created_id(&app, &application, &request).await;
    json(
        sign_as(&app, &application, &key, &id, "ann@example.com").await,
        200,
    )
    .await;
    app.advance(Duration::from_secs(3601));
    let path = format!("/v1/signature/documents/{id}");
    // Expired at once to readers, and recorded by the sweeper within a poll.
    let shown = json(read(&app, &application, &key, &path).await, 200).await;
    assert_eq!(shown["data"]["status"], "expired");
    error(
        sign_as(&app, &application, &key, &id, "bo@example.com").await,
        409,
        "conflict",
    )
    .await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let shown = json(read(&app, &application, &key, &path).await, 200).await;
    assert_eq!(shown["data"]["status"], "expired");
    assert_eq!(shown["data"]["signers"][0]["status"], "signed");
    error(
        read(&app, &application, &key, &format!("{path}/certificate")).await,
        409,
        "conflict",
    )
    .await;
}

async fn concurrent_last_signatures_complete_once(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let key = application.sandbox_key.clone();
    let emails: Vec<String> = (0..6).map(|n| format!("s{n}@example.com")).collect();
    let signers: Vec<(&str, &str)> = emails.iter().map(|e| (e.as_str(), "Signer")).collect();
    let id = created_id(&app, &application, &body(&pdf(1, ""), &signers)).await;
    // Every signer at once, and each of them twice: six signatures count, the rest are 409.
    let attempts = emails
        .iter()
        .chain(emails.iter())
        .map(|email| sign_as(&app, &application, &key, &id, email));
    let statuses: Vec<u16> = futures_util::future::join_all(attempts)
        .await
        .into_iter()
        .map(|response| response.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        6,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 409).count(),
        6,
        "{statuses:?}"
    );
    let shown = json(
        read(
            &app,
            &application,
            &key,
            &format!("/v1/signature/documents/{id}"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(shown["data"]["status"], "completed");
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "signature.completed")
                .cloned()
        })
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let completions = receiver
        .received()
        .iter()
        .filter(|r| r.event_type() == "signature.completed")
        .count();
    assert_eq!(completions, 1, "one completion event");
}

async fn a_create_is_idempotent(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let first_body = serde_json::to_vec(&body(&pdf(1, ""), &[("ann@example.com", "Ann")])).unwrap();
    let send = |bytes: Vec<u8>| {
        app.signed(
            Method::POST,
            "/v1/signature/documents",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .header("idempotency-key", "contract-7")
        .send()
    };
    let first = json(send(first_body.clone()).await.unwrap(), 201).await;
    let again = send(first_body).await.unwrap();
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(json(again, 201).await, first, "the stored response");
    let other = serde_json::to_vec(&body(&pdf(2, ""), &[("ann@example.com", "Ann")])).unwrap();
    error(send(other).await.unwrap(), 409, "conflict").await;
}
