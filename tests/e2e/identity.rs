//! Identity verification through the real binary (issue 16): generated documents are read back
//! field for field, a tampered check digit is rejected, the webhook arrives, bad requests change
//! nothing, other tenants see nothing, and a process that dies while analysing loses no job.

use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::identity::ocr_available;
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use idconsent_image_analysis::fixtures::{natural, screen};
use idconsent_ocr_tesseract::fixtures;
use idconsent_verification::aamva::compose_aamva;
use idconsent_verification::mrz::specimen_td3;
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(
    a_passport_is_read_back_and_the_merchant_hears_it,
    a_tampered_check_digit_is_rejected,
    a_licence_back_is_read_from_its_barcode,
    bad_requests_are_refused_and_change_nothing,
    a_process_dying_during_analysis_loses_no_job,
    liveness_names_a_screen_replay_and_never_claims_certainty,
);

#[cfg(feature = "faces")]
on_both_backends!(the_holders_face_matches_and_another_does_not);

fn body(document_type: &str, front: &[u8], back: Option<&[u8]>, selfie: &[u8]) -> Value {
    let mut body = json!({
        "documentType": document_type,
        "documentFront": BASE64.encode(front),
        "selfie": BASE64.encode(selfie),
        "country": "DE",
    });
    if let Some(back) = back {
        body["documentBack"] = json!(BASE64.encode(back));
    }
    body
}

async fn call(
    app: &TestApp,
    application: &Application,
    key: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let bytes = body.map(|body| serde_json::to_vec(body).unwrap());
    app.signed(
        method,
        path,
        key,
        &application.secret,
        bytes.as_deref().unwrap_or(b""),
    )
    .send()
    .await
    .unwrap()
}

async fn submit(app: &TestApp, application: &Application, body: &Value) -> String {
    let response = call(
        app,
        application,
        &application.sandbox_key,
        Method::POST,
        "/v1/identity/verify",
        Some(body),
    )
    .await;
    let created = json(response, 201).await;
    assert_eq!(created["data"]["status"], "processing");
    assert!(created["data"]["estimatedTime"].as_str().is_some());
    created["data"]["verificationId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn completed_event(receiver: &Receiver, id: &str) -> Received {
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == "verification.completed"
                        && r.json()["data"]["verificationId"] == id
                })
                .cloned()
        })
        .await
}

/// The verification as its application reads it now.
async fn status(app: &TestApp, application: &Application, id: &str) -> Value {
    let path = format!("/v1/identity/verify/{id}");
    let key = &application.sandbox_key;
    let response = call(app, application, key, Method::GET, &path, None).await;
    json(response, 200).await["data"].clone()
}

/// Polls the status until the analysis is done (a minute at most).
async fn finished(app: &TestApp, application: &Application, id: &str) -> Value {
    let started = Instant::now();
    loop {
        let data = status(app, application, id).await;
        if data["status"] != "processing" {
            return data;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "still processing: {data}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn a_passport_is_read_back_and_the_merchant_hears_it(app: TestApp) {
    if !ocr_available() {
        return;
    }
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let front = fixtures::passport(&specimen_td3(), None, 1.5).unwrap();
    let id = submit(
        &app,
        &application,
        &body("passport", &front, None, &natural(3)),
    )
    .await;
    let data = finished(&app, &application, &id).await;

    // The ICAO specimen, as printed.
    assert_eq!(
        data["extractedData"],
        json!({
            "firstName": "ANNA MARIA", "lastName": "ERIKSSON", "dateOfBirth": "1974-08-12",
            "documentNumber": "L898902C3", "expiryDate": "2032-04-15", "nationality": "UTO"
        })
    );
    let checks = &data["checks"];
    assert_eq!(checks["dataExtraction"], "completed", "{data}");
    // No security-feature model runs offline, and heuristics never pass a live person.
    assert_eq!(checks["documentAuthenticity"], "inconclusive");
    assert_eq!(checks["livenessDetection"], "inconclusive");
    assert_eq!(checks["faceMatch"], "inconclusive");
    assert_eq!(data["status"], "needs_review");
    assert_eq!(data["sandbox"], true);
    let model = &data["models"][0];
    assert_eq!(model["name"], "mrz.traineddata");
    assert_eq!(model["sha256"].as_str().unwrap().len(), 64);
    let confidence = data["confidence"].as_f64().unwrap();
    assert!((0.0..=1.0).contains(&confidence));

    // The images are deleted once the result is stored (docs/identity.md, "Images").
    let images = app.data_dir().join("blobs/identity").join(&id);
    let left = std::fs::read_dir(&images).map_or(0, |entries| entries.count());
    assert_eq!(left, 0, "{} still holds images", images.display());

    let event = completed_event(&receiver, &id).await;
    assert!(event.verifies_with(&application.webhook_secret));
    let delivered = event.json()["data"].clone();
    assert_eq!(delivered["verificationId"], id.as_str());
    assert_eq!(delivered["extractedData"], data["extractedData"]);
    assert_eq!(delivered["checks"], data["checks"]);
}

async fn a_tampered_check_digit_is_rejected(app: TestApp) {
    if !ocr_available() {
        return;
    }
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let mut mrz = specimen_td3();
    // The birth date's check digit (line 2, position 20) no longer matches the date.
    let mut line: Vec<char> = mrz[1].chars().collect();
    line[19] = if line[19] == '1' { '7' } else { '1' };
    mrz[1] = line.into_iter().collect();
    let front = fixtures::passport(&mrz, None, -1.0).unwrap();
    let id = submit(
        &app,
        &application,
        &body("passport", &front, None, &natural(4)),
    )
    .await;
    let data = finished(&app, &application, &id).await;
    assert_eq!(data["status"], "rejected", "{data}");
    assert_eq!(data["checks"]["dataExtraction"], "failed");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    assert!(data["extractedData"].is_null());
    let reasons = data["findings"].to_string();
    assert!(reasons.contains("birthDate"), "{reasons}");
}

async fn a_licence_back_is_read_from_its_barcode(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let payload = compose_aamva(
        "636014",
        &[
            ("DAQ", "D7654321"),
            ("DCS", "NAKAMURA"),
            ("DAC", "HIRO"),
            ("DBB", "11301979"),
            ("DBA", "11302031"),
            ("DBC", "1"),
            ("DAJ", "WA"),
            ("DCG", "USA"),
        ],
    );
    let back = idconsent_barcode_rxing::fixtures::licence_back(&payload);
    let body = body("drivers_license", &natural(8), Some(&back), &natural(9));
    let id = submit(&app, &application, &body).await;
    let data = finished(&app, &application, &id).await;
    assert_eq!(data["checks"]["dataExtraction"], "completed", "{data}");
    assert_eq!(
        data["extractedData"],
        json!({
            "firstName": "HIRO", "lastName": "NAKAMURA", "dateOfBirth": "1979-11-30",
            "documentNumber": "D7654321", "expiryDate": "2031-11-30", "nationality": "USA"
        })
    );
    // A truncated payload is no AAMVA card: the structure check fails it.
    let cut = idconsent_barcode_rxing::fixtures::licence_back(&payload[..payload.len() - 20]);
    let body = self::body("drivers_license", &natural(8), Some(&cut), &natural(9));
    let id = submit(&app, &application, &body).await;
    let data = finished(&app, &application, &id).await;
    assert_eq!(data["checks"]["dataExtraction"], "failed", "{data}");
    assert_eq!(data["checks"]["documentAuthenticity"], "failed");
    assert_eq!(data["status"], "rejected");
}

async fn bad_requests_are_refused_and_change_nothing(app: TestApp) {
    let (_, application, live_key) = app.live_merchant().await;
    let front = natural(5);
    let selfie = natural(6);
    let refused = |body: Value, status: u16, kind: &'static str, field: &'static str| {
        let (app, application, live_key) = (&app, &application, &live_key);
        async move {
            let response = call(
                app,
                application,
                live_key,
                Method::POST,
                "/v1/identity/verify",
                Some(&body),
            )
            .await;
            let error = error(response, status, kind).await;
            if !field.is_empty() {
                let fields = error["details"].to_string();
                assert!(fields.contains(field), "{field} not in {error}");
            }
        }
    };
    let mut unknown = body("passport", &front, None, &selfie);
    unknown["documentType"] = json!("library_card");
    refused(unknown, 422, "validation_error", "documentType").await;
    refused(
        body("national_id", &front, None, &selfie),
        422,
        "validation_error",
        "documentBack",
    )
    .await;
    refused(
        body("drivers_license", &front, None, &selfie),
        422,
        "validation_error",
        "documentBack",
    )
    .await;
    let mut country = body("passport", &front, None, &selfie);
    country["country"] = json!("XX");
    refused(country, 422, "validation_error", "country").await;
    refused(
        body("passport", b"GIF89a not an accepted image", None, &selfie),
        422,
        "validation_error",
        "documentFront",
    )
    .await;
    refused(
        body("passport", &front, None, &front[..front.len() / 2]),
        422,
        "validation_error",
        "selfie",
    )
    .await;
    let mut not_base64 = body("passport", &front, None, &selfie);
    not_base64["selfie"] = json!("%%% not base64 %%%");
    refused(not_base64, 422, "validation_error", "selfie").await;
    let mut missing = body("passport", &front, None, &selfie);
    missing.as_object_mut().unwrap().remove("selfie");
    refused(missing, 400, "bad_request", "").await;
    // Over 10 MiB decoded: refused before any decoding.
    let huge = vec![0u8; (10 << 20) + 1];
    refused(
        body("passport", &huge, None, &selfie),
        413,
        "payload_too_large",
        "",
    )
    .await;

    // Nothing was counted against the quota, and nothing exists for anyone to read.
    let usage = call(
        &app,
        &application,
        &live_key,
        Method::GET,
        "/v1/service/billings/usage",
        None,
    )
    .await;
    assert_eq!(
        json(usage, 200).await["data"]["usage"]["verifications"]["used"],
        0
    );

    // A verification is its application's alone, in its own environment.
    let id = submit(&app, &application, &body("passport", &front, None, &selfie)).await;
    let path = format!("/v1/identity/verify/{id}");
    let other = app.application(&app.register_merchant().await).await;
    for (application, key) in [
        (&other, other.sandbox_key.as_str()),
        (&application, live_key.as_str()),
    ] {
        let response = call(&app, application, key, Method::GET, &path, None).await;
        error(response, 404, "not_found").await;
    }
    let unknown = call(
        &app,
        &application,
        &application.sandbox_key,
        Method::GET,
        "/v1/identity/verify/idv_01JZZZZZZZZZZZZZZZZZZZZZZZ",
        None,
    )
    .await;
    error(unknown, 404, "not_found").await;
}

async fn a_process_dying_during_analysis_loses_no_job(mut app: TestApp) {
    if !ocr_available() {
        return;
    }
    // The first process's OCR engine never answers: it is killed while analysing.
    let stuck = app.data_dir().join("stuck-tesseract");
    std::fs::write(
        &stuck,
        "#!/bin/sh\n[ \"$1\" = --version ] && { echo 'tesseract (stuck)'; exit 0; }\nsleep 600\n",
    )
    .unwrap();
    std::fs::set_permissions(&stuck, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let stuck_process = app
        .second_server_with(|config| config.identity.tesseract = stuck.clone())
        .await;
    // Only the stuck process runs now: it takes the job and hangs in OCR.
    app.stop_server().await;
    app.base = stuck_process.url();
    let front = fixtures::passport(&specimen_td3(), None, 0.5).unwrap();
    let id = submit(
        &app,
        &application,
        &body("passport", &front, None, &natural(7)),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    stuck_process.kill().await;

    // A healthy process takes the job over once the dead one's lease has run out.
    let healthy = app.second_server().await;
    app.base = healthy.url();
    assert_eq!(
        status(&app, &application, &id).await["status"],
        "processing"
    );
    // The dead process's lease holds it: nobody analyses it twice meanwhile.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        status(&app, &application, &id).await["status"],
        "processing"
    );
    app.advance(Duration::from_secs(121));
    let data = finished(&app, &application, &id).await;
    assert_eq!(data["checks"]["dataExtraction"], "completed", "{data}");
    let event = completed_event(&receiver, &id).await;
    assert_eq!(event.json()["data"]["status"], data["status"]);
    healthy.stop().await;
}

async fn liveness_names_a_screen_replay_and_never_claims_certainty(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let judge = |image: Vec<u8>, challenge: Option<&str>| {
        let (app, application) = (&app, &application);
        let mut body = json!({ "image": BASE64.encode(image) });
        if let Some(challenge) = challenge {
            body["challenge"] = json!(challenge);
        }
        async move {
            call(
                app,
                application,
                &application.sandbox_key,
                Method::POST,
                "/v1/identity/biometrics/liveness",
                Some(&body),
            )
            .await
        }
    };
    let replay = json(judge(screen(2), Some("blink")).await, 200).await["data"].clone();
    assert_eq!(replay["isLive"], false, "{replay}");
    assert_eq!(replay["spoofType"], "screen_replay");
    assert!(replay["confidence"].as_f64().unwrap() < 0.95);
    assert_eq!(replay["challenge"], "blink");
    assert!(replay["processingTime"].as_str().unwrap().ends_with("ms"));

    let plain = json(judge(natural(2), None).await, 200).await["data"].clone();
    assert!(plain["spoofType"].is_null(), "{plain}");
    assert_eq!(plain["check"], "inconclusive");
    assert_eq!(plain["isLive"], false);
    assert_eq!(plain["confidence"], 0.0);

    let bad = judge(natural(2), Some("wink")).await;
    error(bad, 422, "validation_error").await;
    let not_image = judge(b"plain text".to_vec(), None).await;
    error(not_image, 422, "validation_error").await;
}

/// The server built with `--features faces` (CI): the holder's selfie matches the portrait on
/// the passport, someone else's does not and rejects the verification.
#[cfg(feature = "faces")]
async fn the_holders_face_matches_and_another_does_not(app: TestApp) {
    use idconsent_e2e::identity::portrait;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let astronaut = portrait("astronaut.png");
    let front = fixtures::passport(&specimen_td3(), Some(&astronaut), 1.0).unwrap();

    let id = submit(
        &app,
        &application,
        &body("passport", &front, None, &astronaut),
    )
    .await;
    let holder = finished(&app, &application, &id).await;
    assert_eq!(holder["checks"]["faceMatch"], "passed", "{holder}");
    assert!(holder["faceDistance"].as_f64().unwrap() <= 0.5);
    let names: Vec<&str> = holder["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|model| model["name"].as_str())
        .collect();
    assert!(
        names.contains(&"dlib_face_recognition_resnet_model_v1.dat"),
        "{names:?}"
    );

    let other = portrait("camera.png");
    let id = submit(&app, &application, &body("passport", &front, None, &other)).await;
    let stranger = finished(&app, &application, &id).await;
    assert_eq!(stranger["checks"]["faceMatch"], "failed", "{stranger}");
    assert!(stranger["faceDistance"].as_f64().unwrap() >= 0.65);
    assert_eq!(stranger["status"], "rejected");
}
