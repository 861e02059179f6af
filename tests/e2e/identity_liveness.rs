//! Liveness answers say what they know (issue 31, items 8 and 9): `isLive` is true only when
//! liveness was proven (`check: passed`, which no heuristic reaches); a blank or blurred frame
//! is inconclusive and says why; a found cue names its spoof; sandbox answers are marked.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, json, on_both_backends};
use idconsent_image_analysis::fixtures::{blank, blurred, natural, screen};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    a_frame_that_shows_nothing_is_never_live_and_says_why,
    a_sandbox_answer_is_marked_and_a_live_one_is_not,
);

#[cfg(feature = "faces")]
on_both_backends!(a_frame_without_a_face_says_so);

async fn judge(app: &TestApp, application: &Application, key: &str, image: &[u8]) -> Value {
    let body = serde_json::to_vec(&json!({ "image": BASE64.encode(image) })).unwrap();
    let response = app
        .signed(
            Method::POST,
            "/v1/identity/biometrics/liveness",
            key,
            &application.secret,
            &body,
        )
        .send()
        .await
        .unwrap();
    let data = json(response, 200).await["data"].clone();
    // The rule of every answer: live only when proven.
    assert_eq!(data["isLive"], data["check"] == "passed", "{data}");
    data
}

async fn a_frame_that_shows_nothing_is_never_live_and_says_why(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = &application.sandbox_key;

    for (name, image) in [("blank", blank()), ("blurred", blurred(4))] {
        let data = judge(&app, &application, key, &image).await;
        assert_eq!(data["isLive"], false, "{name}: {data}");
        assert_eq!(data["check"], "inconclusive", "{name}: {data}");
        assert_eq!(data["reason"], "too_blurred", "{name}: {data}");
        assert!(data["spoofType"].is_null(), "{name}: {data}");
        assert_eq!(data["confidence"], 0.0, "{name}: {data}");
        assert!(
            data["signals"]["sharpness"].as_f64().unwrap() < 15.0,
            "{name}: {data}"
        );
    }

    // A clean frame without a cue is still no proof of a live person.
    let plain = judge(&app, &application, key, &natural(2)).await;
    assert_eq!(plain["isLive"], false, "{plain}");
    assert_eq!(plain["check"], "inconclusive");
    assert!(plain["spoofType"].is_null(), "{plain}");
    assert_eq!(plain["confidence"], 0.0);
    // Without a face detector in this build the frame's face is not checked, and it says so;
    // with one, the scene (no face in it) is `no_face`.
    let expected = if cfg!(feature = "faces") {
        "no_face"
    } else {
        "no_spoof_cue"
    };
    assert_eq!(plain["reason"], expected, "{plain}");

    // A found cue names the attack.
    let replay = judge(&app, &application, key, &screen(2)).await;
    assert_eq!(replay["isLive"], false);
    assert_eq!(replay["check"], "failed");
    assert_eq!(replay["reason"], "spoof_detected");
    assert_eq!(replay["spoofType"], "screen_replay");
    let confidence = replay["confidence"].as_f64().unwrap();
    assert!((0.6..0.95).contains(&confidence), "{replay}");
}

async fn a_sandbox_answer_is_marked_and_a_live_one_is_not(app: TestApp) {
    let (_, application, live_key) = app.live_merchant().await;
    let sandbox = judge(&app, &application, &application.sandbox_key, &screen(3)).await;
    assert_eq!(sandbox["sandbox"], true, "{sandbox}");
    let live = judge(&app, &application, &live_key, &screen(3)).await;
    assert_eq!(live["sandbox"], false, "{live}");
    // The same analysis either way.
    for field in [
        "isLive",
        "check",
        "reason",
        "spoofType",
        "confidence",
        "signals",
    ] {
        assert_eq!(sandbox[field], live[field], "{field}");
    }
}

/// The server built with `--features faces`: a portrait has a face (no `no_face`), a cup of
/// coffee has none.
#[cfg(feature = "faces")]
async fn a_frame_without_a_face_says_so(app: TestApp) {
    use idconsent_e2e::identity::portrait;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = &application.sandbox_key;
    let coffee = judge(&app, &application, key, &portrait("coffee.png")).await;
    assert_eq!(coffee["reason"], "no_face", "{coffee}");
    assert_eq!(coffee["isLive"], false);
    let face = judge(&app, &application, key, &portrait("astronaut.png")).await;
    assert_eq!(face["reason"], "no_spoof_cue", "{face}");
    assert_eq!(face["isLive"], false);
}
