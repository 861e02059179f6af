//! Identity verification in sandbox: submit, the finished status, its event, liveness (a
//! screen replay, a blank frame). The document is a plain scene (no machine-readable zone) so
//! the bodies are the same whether or not this machine has the OCR engine or the binary the
//! face matcher; only the reasons the zone was not read, the faces not compared and the
//! selfie's face not checked, and the model list, differ, and they are pinned as placeholders
//! (tests/e2e/identity.rs checks them).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::{TestApp, json};
use idconsent_emrtd::fixtures::{Chip, ChipSpec, Csca, KeyAlgorithm, portrait_jpeg};
use idconsent_image_analysis::fixtures::{blank, natural, screen};
use idconsent_kernel::Timestamp;
use reqwest::Method;
use serde_json::{Value, json};

use super::Contract;
use super::consents::signed;

/// `data` with the parts that depend on the installed OCR engine replaced.
fn installation_independent(mut body: Value) -> Value {
    let data = &mut body["data"];
    if let Some(findings) = data["findings"].as_array_mut() {
        for finding in findings {
            if finding["check"] == "dataExtraction" {
                finding["reason"] = json!("[why the zone was not read]");
            }
            if finding["check"] == "faceMatch" {
                finding["reason"] = json!("[why the faces were not compared]");
            }
            let unchecked_face = finding["reason"]
                .as_str()
                .is_some_and(|reason| reason.starts_with("whether the frame holds a face"));
            if finding["check"] == "livenessDetection" && unchecked_face {
                finding["reason"] = json!("[why the selfie's face was not checked]");
            }
        }
    }
    if data["models"].is_array() {
        data["models"] =
            json!([{"name": "[model]", "version": "[this installation's]", "sha256": "[sha256]"}]);
    }
    body
}

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let body = json!({
        "documentType": "passport",
        "documentFront": BASE64.encode(natural(11)),
        "selfie": BASE64.encode(natural(12)),
        "country": "SE",
    });
    let created = contract
        .response(
            "POST /v1/identity/verify",
            "",
            signed(
                app,
                &application,
                Method::POST,
                "/v1/identity/verify",
                Some(&body),
            )
            .await,
        )
        .await;
    let id = created["data"]["verificationId"]
        .as_str()
        .unwrap()
        .to_owned();
    let event = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "verification.completed")
                .cloned()
        })
        .await;
    let path = format!("/v1/identity/verify/{id}");
    let finished = json(
        signed(app, &application, Method::GET, &path, None).await,
        200,
    )
    .await;
    contract.body(
        "GET /v1/identity/verify/{verificationId}",
        200,
        "needs_review",
        &installation_independent(finished),
    );
    contract.event_body("", &installation_independent(event.json()));

    // A chip on a server that trusts no CSCA (the walk's): the details say nothing was proven.
    let mut issued = json(
        signed(
            app,
            &application,
            Method::POST,
            "/v1/identity/chip-challenge",
            None,
        )
        .await,
        201,
    )
    .await;
    // Standard base64 of 8 random bytes (with `+`, `/`, `=`), which no redaction rule knows.
    let challenge = BASE64
        .decode(issued["data"]["challenge"].as_str().unwrap())
        .unwrap();
    assert_eq!(challenge.len(), 8);
    issued["data"]["challenge"] = json!("[base64 of 8 random bytes]");
    contract.body("POST /v1/identity/chip-challenge", 201, "", &issued);
    let chip = Chip::build(
        &ChipSpec::specimen(portrait_jpeg()),
        &Csca::new(
            "UT",
            KeyAlgorithm::P256,
            Timestamp::from_millis(app.now_millis()),
        )
        .issue(
            KeyAlgorithm::P256,
            Timestamp::from_millis(app.now_millis() - 86_400_000),
            Timestamp::from_millis(app.now_millis() + 86_400_000),
        ),
    );
    let body = json!({
        "documentType": "passport",
        "documentFront": BASE64.encode(natural(11)),
        "selfie": BASE64.encode(natural(12)),
        "country": "SE",
        "chip": {
            "dg1": BASE64.encode(&chip.dg1),
            "dg2": BASE64.encode(&chip.dg2),
            "sod": BASE64.encode(&chip.sod),
        },
        "requiredChecks": ["documentAuthenticity", "dataExtraction"],
    });
    let created = json(
        signed(
            app,
            &application,
            Method::POST,
            "/v1/identity/verify",
            Some(&body),
        )
        .await,
        201,
    )
    .await;
    let path = format!(
        "/v1/identity/verify/{}",
        created["data"]["verificationId"].as_str().unwrap()
    );
    let finished = loop {
        let data = json(
            signed(app, &application, Method::GET, &path, None).await,
            200,
        )
        .await;
        if data["data"]["status"] != "processing" {
            break data;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    contract.body(
        "GET /v1/identity/verify/{verificationId}",
        200,
        "chip not checked",
        &installation_independent(finished),
    );
    contract
        .response(
            "POST /v1/identity/biometrics/liveness",
            "screen replay",
            signed(
                app,
                &application,
                Method::POST,
                "/v1/identity/biometrics/liveness",
                Some(&json!({"image": BASE64.encode(screen(1)), "challenge": "smile"})),
            )
            .await,
        )
        .await;
    contract
        .response(
            "POST /v1/identity/biometrics/liveness",
            "blank frame",
            signed(
                app,
                &application,
                Method::POST,
                "/v1/identity/biometrics/liveness",
                Some(&json!({"image": BASE64.encode(blank())})),
            )
            .await,
        )
        .await;
}
