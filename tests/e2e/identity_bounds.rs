//! Bounds on identity uploads (issue 31, item 4): image shapes that would cost the OCR clean-up
//! gigabytes are refused at submit, and sandbox keys get a daily cap per application.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use futures_util::future::join_all;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{Backend, TestApp, error, json, on_both_backends};
use idconsent_image_analysis::fixtures::{natural, stripes};
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(strips_are_refused_at_submit_and_cost_nothing);

/// The cap of the capped servers below.
const CAP: usize = 3;

fn body(front: &[u8], selfie: &[u8]) -> Value {
    json!({
        "documentType": "passport",
        "documentFront": BASE64.encode(front),
        "selfie": BASE64.encode(selfie),
        "country": "DE",
    })
}

async fn post(
    app: &TestApp,
    application: &Application,
    key: &str,
    path: &str,
    body: &Value,
) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(Method::POST, path, key, &application.secret, &bytes)
        .send()
        .await
        .unwrap()
}

async fn strips_are_refused_at_submit_and_cost_nothing(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    // The 64 × 8192 PNG, as the front and (turned) as the selfie.
    let (tall, wide) = (stripes(64, 8192), stripes(8192, 64));
    for (body, field) in [
        (body(&tall, &natural(1)), "documentFront"),
        (body(&natural(1), &wide), "selfie"),
    ] {
        let refused = error(
            post(&app, &application, &key, "/v1/identity/verify", &body).await,
            422,
            "validation_error",
        )
        .await;
        assert_eq!(refused["details"][0]["field"], field, "{refused}");
        let message = refused["details"][0]["message"].as_str().unwrap();
        assert!(message.contains("4 times"), "{message}");
    }
    let refused = error(
        post(
            &app,
            &application,
            &key,
            "/v1/identity/biometrics/liveness",
            &json!({ "image": BASE64.encode(&tall) }),
        )
        .await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "image", "{refused}");
    // Refused uploads are not counted: the whole default cap is still there.
    let accepted = post(
        &app,
        &application,
        &key,
        "/v1/identity/verify",
        &body(&natural(1), &natural(2)),
    )
    .await;
    json(accepted, 201).await;
}

/// Twenty sandbox submissions at once against a cap of three: three are accepted, the rest get
/// 429 with `Retry-After` until midnight UTC. Another application, live keys and the next day
/// are counted apart.
async fn sandbox_verifications_are_capped_per_application_per_day(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| {
        config.identity.sandbox_daily_cap = CAP as u32;
        // Analysis is not what this is about: the jobs wait.
        config.identity.workers = 0;
    })
    .await
    else {
        return;
    };
    let (_, application, live_key) = app.live_merchant().await;
    let key = application.sandbox_key.clone();
    let upload = body(&natural(1), &natural(2));

    let answers =
        join_all((0..20).map(|_| post(&app, &application, &key, "/v1/identity/verify", &upload)))
            .await;
    let mut accepted = 0;
    for answer in answers {
        if answer.status() == 201 {
            accepted += 1;
            continue;
        }
        let retry_after: u64 = answer.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=86_400).contains(&retry_after), "{retry_after}");
        let refused = error(answer, 429, "rate_limited").await;
        assert!(
            refused["message"].as_str().unwrap().contains("per day"),
            "{refused}"
        );
    }
    assert_eq!(accepted, CAP);

    // Live traffic is billed, not capped; another merchant's application has its own count.
    let live = post(
        &app,
        &application,
        &live_key,
        "/v1/identity/verify",
        &upload,
    )
    .await;
    json(live, 201).await;
    let other = app.application(&app.register_merchant().await).await;
    let theirs = post(
        &app,
        &other,
        &other.sandbox_key,
        "/v1/identity/verify",
        &upload,
    )
    .await;
    json(theirs, 201).await;

    // The next UTC day the application may submit again.
    let refused = post(&app, &application, &key, "/v1/identity/verify", &upload).await;
    error(refused, 429, "rate_limited").await;
    app.advance(Duration::from_secs(86_400));
    let next_day = post(&app, &application, &key, "/v1/identity/verify", &upload).await;
    json(next_day, 201).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_verifications_are_capped_per_application_per_day_on_sqlite() {
    sandbox_verifications_are_capped_per_application_per_day(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sandbox_verifications_are_capped_per_application_per_day_on_postgres() {
    sandbox_verifications_are_capped_per_application_per_day(Backend::Postgres).await;
}
