//! The hosted approval page of a mandate addressed to an email (issue 14): emailed link and
//! code, browser passkey (a software passkey here; headless Chromium in `hosted_browser.rs`),
//! decision — and the abuse cases: guessing, resending, replaying, changing the mandate meanwhile.

use std::time::Duration;

use futures_util::future::join_all;
use idconsent_e2e::hosted::PageVisitor;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    an_email_recipient_authorises_on_the_hosted_page,
    wrong_codes_lock_the_address_and_resends_wait,
    concurrent_guesses_take_at_most_five_attempts,
    a_mandate_changed_after_the_challenge_is_not_decided,
    terms_changed_after_the_page_was_rendered_are_not_decided,
    the_page_needs_an_email_mandate_a_token_and_a_passkey,
    wrong_codes_over_resends_are_counted_ten_a_day,
);

async fn signed(
    app: &TestApp,
    application: &Application,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> reqwest::Response {
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    app.signed(
        method,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

/// A mandate to a fresh email address; the visitor at its page.
async fn mandate_to_email(app: &TestApp, application: &Application) -> (Value, PageVisitor) {
    let email = PageVisitor::address();
    let body = json!({
        "recipient": email, "type": "standing_order", "amount": 120,
        "currency": "EUR", "frequency": "monthly", "description": "Rent, flat 3"
    });
    let created = json(
        signed(
            app,
            application,
            Method::POST,
            "/v1/service/mandates",
            Some(&body),
        )
        .await,
        200,
    )
    .await["data"]
        .clone();
    let page = format!("/mandates/{}", created["id"].as_str().unwrap());
    (created, PageVisitor::at(&email, &page))
}

async fn status(app: &TestApp, application: &Application, id: &str) -> Value {
    let path = format!("/v1/service/mandates/{id}");
    json(
        signed(app, application, Method::GET, &path, None).await,
        200,
    )
    .await["data"]["status"]
        .clone()
}

async fn an_email_recipient_authorises_on_the_hosted_page(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let (created, mut visitor) = mandate_to_email(&app, &application).await;
    let id = created["id"].as_str().unwrap().to_owned();

    // The recipient is emailed the page's link.
    let invitation = app.last_message(&visitor.email).await;
    let link = invitation["link"].as_str().unwrap();
    assert_eq!(link, created["approvalUrl"].as_str().unwrap());
    assert!(link.ends_with(&visitor.page), "{link}");

    // The page: the terms, the address masked, a strict policy, nothing cached.
    let page = app.get(&visitor.page).await;
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert!(
        headers["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("script-src 'nonce-")
    );
    assert_eq!(headers["cache-control"], "no-store");
    assert_eq!(headers["x-frame-options"], "DENY");
    let html = page.text().await.unwrap();
    assert!(html.contains("Rent, flat 3"), "{html}");
    assert!(html.contains("up to 120 EUR, monthly"), "{html}");
    assert!(!html.contains(&visitor.email), "the address is masked");

    let token = visitor.token(&app).await;
    let step = visitor.passkey_step(&app, &token).await;
    assert_eq!(step["context"]["mandateId"], id.as_str());
    assert_eq!(step["context"]["description"], "Rent, flat 3");
    let assertion = visitor.assert(&step);
    let decided = json(
        visitor.decide(&app, &token, "approve", &assertion).await,
        200,
    )
    .await;
    assert_eq!(decided["data"]["status"], "active");
    assert_eq!(status(&app, &application, &id).await, "active");
    let event = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "mandate.signed" && r.json()["data"]["id"] == id)
                .cloned()
        })
        .await;
    assert!(event.verifies_with(&application.webhook_secret));
    assert_eq!(event.json()["data"]["recipient"], visitor.email.as_str());

    // Decided once: a second answer finds nothing to decide; the page says what it is now.
    error(
        visitor.decide(&app, &token, "reject", &assertion).await,
        409,
        "conflict",
    )
    .await;
    let closed = app.get(&visitor.page).await;
    assert_eq!(closed.status(), 409);
    assert!(closed.text().await.unwrap().contains("active"));
    error(
        visitor.post(&app, "/code", &json!({})).await,
        409,
        "conflict",
    )
    .await;
    app.stop().await;
}

async fn wrong_codes_lock_the_address_and_resends_wait(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let (_, visitor) = mandate_to_email(&app, &application).await;
    let code = visitor.code(&app).await;
    // One code a minute.
    let again = error(
        visitor.post(&app, "/code", &json!({})).await,
        429,
        "rate_limited",
    )
    .await;
    assert!(again["message"].as_str().unwrap().contains("minute"));
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for left in (1..=4).rev() {
        let refused = error(
            visitor
                .post(&app, "/code/verify", &json!({"code": wrong}))
                .await,
            401,
            "unauthorized",
        )
        .await;
        assert!(
            refused["message"]
                .as_str()
                .unwrap()
                .contains(&format!("{left} attempts left")),
            "{refused}"
        );
    }
    let fifth = visitor
        .post(&app, "/code/verify", &json!({"code": wrong}))
        .await;
    assert_eq!(fifth.status(), 429);
    let retry: u64 = fifth.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((890..=900).contains(&retry), "{retry}");
    // Locked: the right code, and a new one, wait for the lock.
    error(
        visitor
            .post(&app, "/code/verify", &json!({"code": code}))
            .await,
        429,
        "rate_limited",
    )
    .await;
    app.advance(Duration::from_secs(120));
    error(
        visitor.post(&app, "/code", &json!({})).await,
        429,
        "rate_limited",
    )
    .await;
    app.advance(Duration::from_secs(15 * 60));
    let token = visitor.token(&app).await;
    assert_eq!(token.len(), 64);
    app.stop().await;
}

async fn concurrent_guesses_take_at_most_five_attempts(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let (_, visitor) = mandate_to_email(&app, &application).await;
    let code = visitor.code(&app).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let guesses = (0..20).map(|_| {
        let (app, visitor) = (&app, &visitor);
        async move {
            visitor
                .post(app, "/code/verify", &json!({"code": wrong}))
                .await
                .status()
                .as_u16()
        }
    });
    let statuses = join_all(guesses).await;
    let compared = statuses.iter().filter(|s| **s == 401).count();
    assert_eq!(compared, 4, "{statuses:?}");
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    // The fifth attempt was taken too: the right code is refused now.
    error(
        visitor
            .post(&app, "/code/verify", &json!({"code": code}))
            .await,
        429,
        "rate_limited",
    )
    .await;
    app.stop().await;
}

async fn a_mandate_changed_after_the_challenge_is_not_decided(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let (created, mut visitor) = mandate_to_email(&app, &application).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let token = visitor.token(&app).await;
    let step = visitor.passkey_step(&app, &token).await;
    let assertion = visitor.assert(&step);
    let path = format!("/v1/service/mandates/{id}");
    json(
        signed(
            &app,
            &application,
            Method::PUT,
            &path,
            Some(&json!({"amount": 950})),
        )
        .await,
        200,
    )
    .await;
    error(
        visitor.decide(&app, &token, "approve", &assertion).await,
        409,
        "conflict",
    )
    .await;
    assert_eq!(
        status(&app, &application, &id).await,
        "pending_authorization"
    );
    // A fresh confirmation on the reloaded page shows the new terms and decides them.
    visitor.load(&app).await;
    app.advance(Duration::from_secs(61));
    let token = visitor.token(&app).await;
    let step = visitor.passkey_step(&app, &token).await;
    assert_eq!(step["context"]["terms"]["amount"], 950.0);
    let assertion = visitor.assert(&step);
    json(
        visitor.decide(&app, &token, "reject", &assertion).await,
        200,
    )
    .await;
    assert_eq!(status(&app, &application, &id).await, "cancelled");
    app.stop().await;
}

async fn the_page_needs_an_email_mandate_a_token_and_a_passkey(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    // A mandate to a phone is decided in the app: no page for it.
    let body = json!({"recipient": "+15550100777", "type": "authorization", "description": "Card"});
    let phone = json(
        signed(
            &app,
            &application,
            Method::POST,
            "/v1/service/mandates",
            Some(&body),
        )
        .await,
        200,
    )
    .await;
    let phone_page = format!("/mandates/{}", phone["data"]["id"].as_str().unwrap());
    assert!(phone["data"].get("approvalUrl").is_none());
    error(app.get(&phone_page).await, 404, "not_found").await;
    error(
        app.post_json(&format!("{phone_page}/code"), &json!({}))
            .await,
        404,
        "not_found",
    )
    .await;
    error(app.get("/mandates/md_nope").await, 404, "not_found").await;

    let (created, mut visitor) = mandate_to_email(&app, &application).await;
    let id = created["id"].as_str().unwrap().to_owned();
    // Only the id as it is spelled names the mandate: another case or padding is nothing (a
    // second spelling must never get its own attempts).
    let body = id.trim_start_matches("md_");
    for other in [
        format!("MD_{body}"),
        format!("md_{}", body.to_lowercase()),
        format!("md_{body}%20"),
        format!("%20md_{body}"),
    ] {
        let page = format!("/mandates/{other}");
        error(app.get(&page).await, 404, "not_found").await;
        error(
            app.post_json(&format!("{page}/code"), &json!({})).await,
            404,
            "not_found",
        )
        .await;
        error(
            app.post_json(&format!("{page}/code/verify"), &json!({"code": "123456"}))
                .await,
            404,
            "not_found",
        )
        .await;
    }
    // No token, a made-up token: nothing.
    for token in ["", &"ab".repeat(32)] {
        error(
            visitor.decide(&app, token, "approve", &json!({})).await,
            401,
            "unauthorized",
        )
        .await;
        error(
            visitor
                .post(&app, "/passkey/registration", &json!({"token": token}))
                .await,
            401,
            "unauthorized",
        )
        .await;
    }
    // A token but no passkey: refused, and the token survives for the passkey step.
    let token = visitor.token(&app).await;
    error(
        visitor.decide(&app, &token, "approve", &json!({})).await,
        401,
        "unauthorized",
    )
    .await;
    // A malformed body is 400; an unknown decision 422.
    error(
        visitor
            .post(&app, "/code/verify", &json!({"kode": 1}))
            .await,
        400,
        "bad_request",
    )
    .await;
    let step = visitor.passkey_step(&app, &token).await;
    let assertion = visitor.assert(&step);
    error(
        visitor.decide(&app, &token, "maybe", &assertion).await,
        422,
        "validation_error",
    )
    .await;
    // A tampered assertion does not verify.
    let mut tampered = assertion.clone();
    idconsent_passkey_soft::tamper_signature(&mut tampered).unwrap();
    error(
        visitor.decide(&app, &token, "approve", &tampered).await,
        401,
        "unauthorized",
    )
    .await;
    assert_eq!(
        status(&app, &application, &id).await,
        "pending_authorization"
    );
    app.stop().await;
}

/// Issue 31: the page showed 120 EUR, the merchant changed the amount before the passkey step,
/// and the challenge committed to the new terms — the recipient approved what they never saw.
/// The page carries the hash of what it rendered; a step with an old hash is 409 and changes
/// nothing, and the reloaded page decides the new terms.
async fn terms_changed_after_the_page_was_rendered_are_not_decided(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let (created, mut visitor) = mandate_to_email(&app, &application).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let shown = visitor.load(&app).await;
    assert!(shown.contains("up to 120 EUR, monthly"), "{shown}");
    let token = visitor.token(&app).await;
    let path = format!("/v1/service/mandates/{id}");
    let put = |amount: u32| {
        let (app, application, path) = (&app, &application, &path);
        async move {
            json(
                signed(
                    app,
                    application,
                    Method::PUT,
                    path,
                    Some(&json!({"amount": amount})),
                )
                .await,
                200,
            )
            .await
        }
    };
    put(1000).await;

    // The passkey step with what the page showed: refused, the page says to reload.
    let created_passkey = visitor.register_passkey(&app, &token).await;
    let refused = error(
        visitor.assertion_step(&app, &token, &created_passkey).await,
        409,
        "conflict",
    )
    .await;
    assert!(
        refused["message"].as_str().unwrap().contains("reload"),
        "{refused}"
    );
    assert_eq!(refused["details"][0]["field"], "contextHash", "{refused}");
    assert_eq!(
        status(&app, &application, &id).await,
        "pending_authorization"
    );

    // Reloaded: the page shows the new terms, and the passkey commits to them.
    let reloaded = visitor.load(&app).await;
    assert!(reloaded.contains("up to 1000 EUR, monthly"), "{reloaded}");
    let step = visitor.passkey_step(&app, &token).await;
    assert_eq!(step["context"]["terms"]["amount"], 1000.0);
    let assertion = visitor.assert(&step);

    // Changed again after the passkey step: the decision with the page's hash is refused too,
    // and the token survives for the page reloaded once more.
    put(2000).await;
    let refused = error(
        visitor.decide(&app, &token, "approve", &assertion).await,
        409,
        "conflict",
    )
    .await;
    assert!(
        refused["message"].as_str().unwrap().contains("reload"),
        "{refused}"
    );
    let mandate = json(
        signed(&app, &application, Method::GET, &path, None).await,
        200,
    )
    .await;
    assert_eq!(mandate["data"]["status"], "pending_authorization");
    assert_eq!(mandate["data"]["amount"], 2000.0);

    // Reloaded once more: the terms on the page are the terms approved.
    let reloaded = visitor.load(&app).await;
    assert!(reloaded.contains("up to 2000 EUR, monthly"), "{reloaded}");
    let step = visitor.passkey_step(&app, &token).await;
    assert_eq!(step["context"]["terms"]["amount"], 2000.0);
    let assertion = visitor.assert(&step);
    let decided = json(
        visitor.decide(&app, &token, "approve", &assertion).await,
        200,
    )
    .await;
    assert_eq!(decided["data"]["status"], "active");
    let mandate = json(
        signed(&app, &application, Method::GET, &path, None).await,
        200,
    )
    .await;
    assert_eq!(mandate["data"]["amount"], 2000.0);
    app.stop().await;
}

/// Issue 31: a resend used to restore five attempts, so 11 wrong codes over three resends still
/// left the right code a page token. Wrong codes are counted across resends: ten per recipient
/// and object in 24 hours, then even the right code buys nothing until the window ends.
async fn wrong_codes_over_resends_are_counted_ten_a_day(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let (_, visitor) = mandate_to_email(&app, &application).await;
    let mut wrong_codes = 0;
    let mut code = String::new();
    for guesses in [4, 4, 2] {
        code = visitor.code(&app).await;
        let wrong = if code == "000000" { "111111" } else { "000000" };
        for _ in 0..guesses {
            let refused = visitor
                .post(&app, "/code/verify", &json!({"code": wrong}))
                .await;
            assert!(
                [401, 429].contains(&refused.status().as_u16()),
                "{}",
                refused.status()
            );
            wrong_codes += 1;
        }
        app.advance(Duration::from_secs(61));
    }
    assert_eq!(wrong_codes, 10);
    // The last code is live and has attempts of its own left, but the day's ten are used.
    let right = visitor
        .post(&app, "/code/verify", &json!({"code": code}))
        .await;
    assert_eq!(right.status(), 429, "the right code bought a page token");
    let retry: u64 = right.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    let day = 24 * 3600;
    assert!((day - 4 * 60..=day).contains(&retry), "{retry}");
    // No new code while the window lasts either.
    error(
        visitor.post(&app, "/code", &json!({})).await,
        429,
        "rate_limited",
    )
    .await;
    // When the first wrong code is a day old, a new code works again.
    app.advance(Duration::from_secs(day));
    let token = visitor.token(&app).await;
    assert_eq!(token.len(), 64);
    app.stop().await;
}
