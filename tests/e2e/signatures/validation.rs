//! What a create refuses: documents that are not PDFs, encrypted or too large, and bad signers
//! or values.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::{TestApp, error, json};
use serde_json::{Value, json};

use super::documents::{padded_pdf, pdf};
use super::{body, create};

pub async fn bad_documents_and_signers_are_refused(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let one = [("ann@example.com", "Ann")];
    let field_of = |body: &Value| body["details"][0]["field"].as_str().unwrap().to_owned();

    let not_base64 = json!({"document": "%%%not base64", "signers": [{"email": "ann@example.com", "name": "Ann"}]});
    let refused = error(
        create(&app, &application, &key, &not_base64).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(field_of(&refused), "document");

    let not_pdf = body(b"hello, I am not a PDF", &one);
    let refused = error(
        create(&app, &application, &key, &not_pdf).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(field_of(&refused), "document");

    let broken = body(b"%PDF-1.7\nthis is not a PDF body at all", &one);
    error(
        create(&app, &application, &key, &broken).await,
        422,
        "validation_error",
    )
    .await;

    let encrypted = body(
        &pdf(
            1,
            "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4 /O <00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff> /U <00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff> >> /ID [<0123456789abcdef0123456789abcdef> <0123456789abcdef0123456789abcdef>]",
        ),
        &one,
    );
    let refused = error(
        create(&app, &application, &key, &encrypted).await,
        422,
        "validation_error",
    )
    .await;
    assert!(
        refused["details"][0]["message"]
            .as_str()
            .unwrap()
            .contains("encrypted"),
        "{refused}"
    );

    let document = pdf(1, "");
    let none = body(&document, &[]);
    let refused = error(
        create(&app, &application, &key, &none).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(field_of(&refused), "signers");
    let emails: Vec<String> = (0..21).map(|n| format!("s{n}@example.com")).collect();
    let many: Vec<(&str, &str)> = emails.iter().map(|e| (e.as_str(), "Signer")).collect();
    error(
        create(&app, &application, &key, &body(&document, &many)).await,
        422,
        "validation_error",
    )
    .await;
    json(
        create(&app, &application, &key, &body(&document, &many[..20])).await,
        201,
    )
    .await;
    let twice = body(
        &document,
        &[("ann@example.com", "Ann"), ("ann@example.com", "Ann again")],
    );
    let refused = error(
        create(&app, &application, &key, &twice).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(field_of(&refused), "signers[1].email");
    let bad_email = body(&document, &[("not-an-email", "Ann")]);
    error(
        create(&app, &application, &key, &bad_email).await,
        422,
        "validation_error",
    )
    .await;

    for hours in [json!(0), json!(721), json!(1.5), json!(-3)] {
        let mut request = body(&document, &one);
        request["expiresIn"] = hours;
        let refused = error(
            create(&app, &application, &key, &request).await,
            422,
            "validation_error",
        )
        .await;
        assert_eq!(field_of(&refused), "expiresIn");
    }
    let mut request = body(&document, &one);
    request["expiresIn"] = json!(720);
    request["requireBiometric"] = json!(false);
    json(create(&app, &application, &key, &request).await, 201).await;

    let mut request = body(&document, &one);
    request["callbackUrl"] = json!("not a url");
    let refused = error(
        create(&app, &application, &key, &request).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(field_of(&refused), "callbackUrl");

    let missing = json!({"signers": [{"email": "ann@example.com", "name": "Ann"}]});
    error(
        create(&app, &application, &key, &missing).await,
        400,
        "bad_request",
    )
    .await;
    let wrong_type = json!({"document": BASE64.encode(&document), "signers": "ann@example.com"});
    error(
        create(&app, &application, &key, &wrong_type).await,
        400,
        "bad_request",
    )
    .await;
}

pub async fn a_document_over_20_mib_is_refused_with_413(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let limit = 20 << 20;
    // The padding moves the xref, whose offset then takes more digits: measure, then adjust.
    let sized = |size: usize| {
        let first = padded_pdf(1, "", size - pdf(1, "").len());
        padded_pdf(1, "", 2 * size - first.len() - pdf(1, "").len())
    };
    // Within the body limit, but one byte over 20 MiB once decoded: the service's 413.
    let large = sized(limit + 1);
    assert_eq!(large.len(), limit + 1);
    let refused = error(
        create(
            &app,
            &application,
            &key,
            &body(&large, &[("ann@example.com", "Ann")]),
        )
        .await,
        413,
        "payload_too_large",
    )
    .await;
    assert!(refused["message"].as_str().unwrap().contains("20971520"));
    // Exactly 20 MiB is accepted.
    let large = sized(limit);
    assert_eq!(large.len(), limit);
    json(
        create(
            &app,
            &application,
            &key,
            &body(&large, &[("ann@example.com", "Ann")]),
        )
        .await,
        201,
    )
    .await;
}
