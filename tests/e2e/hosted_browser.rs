//! The hosted mandate and signing pages in a real browser (issues 14, 15): headless Chromium with a virtual
//! platform authenticator (WebDriver's WebAuthn extension) asks for the emailed code, makes a
//! passkey, asserts with it over the committed challenge, and authorises — or declines.
//!
//! SQLite only: the page drives the same service and stores that `hosted.rs` covers on both
//! backends. The server is reached as `http://localhost:<port>`: WebAuthn needs a secure context
//! and a relying-party ID that is a domain (`localhost`), not an IP address.

use idconsent_e2e::browser::Browser;
use idconsent_e2e::hosted::PageVisitor;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{Backend, TestApp, json};
use reqwest::Method;
use serde_json::json;

/// A service listening on a port picked here, so that its WebAuthn origin can name it.
async fn app_on_localhost() -> (TestApp, String) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let origin = format!("http://localhost:{port}");
    let app = TestApp::start_with(Backend::Sqlite, |config| {
        config.bind = format!("127.0.0.1:{port}");
        config.base_url = origin.clone();
        config.passkeys.rp_origins = format!("http://localhost:8080,{origin}");
    })
    .await
    .expect("SQLite always runs");
    (app, origin)
}

async fn mandate_to(app: &TestApp, application: &Application, email: &str, what: &str) -> String {
    let body = json!({
        "recipient": email, "type": "direct_debit", "amount": 25,
        "currency": "GBP", "frequency": "weekly", "description": what
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let response = app
        .signed(
            Method::POST,
            "/v1/service/mandates",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    json(response, 200).await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn status(app: &TestApp, application: &Application, id: &str) -> String {
    let response = app
        .signed(
            Method::GET,
            &format!("/v1/service/mandates/{id}"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(response, 200).await["data"]["status"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The page's steps in the browser, up to the decision buttons.
async fn confirm_in_browser(browser: &Browser, app: &TestApp, origin: &str, id: &str, email: &str) {
    browser.navigate(&format!("{origin}/mandates/{id}")).await;
    browser.click("send").await;
    browser.wait_for_text("status", "Code sent").await;
    let code = app.last_message(email).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    browser.fill("code", &code).await;
    browser.click("verify").await;
    browser.wait_for_text("status", "Address confirmed").await;
    browser.click("passkey").await;
    browser.wait_for_text("status", "Passkey confirmed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hosted_page_authorises_and_declines_with_a_passkey_in_the_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.add_virtual_authenticator().await;
    let (app, origin) = app_on_localhost().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;

    let email = PageVisitor::address();
    let id = mandate_to(&app, &application, &email, "Weekly veg box").await;
    confirm_in_browser(&browser, &app, &origin, &id, &email).await;
    assert!(
        browser
            .text_of("description")
            .await
            .contains("Weekly veg box")
    );
    assert_eq!(browser.text_of("terms").await, "up to 25 GBP, weekly");
    assert_eq!(
        status(&app, &application, &id).await,
        "pending_authorization"
    );
    browser.click("approve").await;
    browser.wait_for_text("status", "Mandate authorised").await;
    assert_eq!(status(&app, &application, &id).await, "active");

    // A second mandate to another address, declined.
    let other = PageVisitor::address();
    let declined = mandate_to(&app, &application, &other, "Magazine").await;
    confirm_in_browser(&browser, &app, &origin, &declined, &other).await;
    browser.click("reject").await;
    browser.wait_for_text("status", "Mandate declined").await;
    assert_eq!(status(&app, &application, &declined).await, "cancelled");

    // A wrong code is refused on the page, with the attempts left.
    let third = mandate_to(&app, &application, &PageVisitor::address(), "Gym").await;
    browser
        .navigate(&format!("{origin}/mandates/{third}"))
        .await;
    browser.click("send").await;
    browser.wait_for_text("status", "Code sent").await;
    browser.fill("code", "12345x").await;
    browser.click("verify").await;
    browser.wait_for_text("status", "attempts left").await;
    app.stop().await;
}

/// Issue 31: the merchant changes the terms after the page was loaded. The page's passkey step
/// is refused, the page says so and offers a reload, and the reloaded page shows — and
/// authorises — the new terms only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terms_changed_after_loading_are_shown_after_a_reload_in_the_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.add_virtual_authenticator().await;
    let (app, origin) = app_on_localhost().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let email = PageVisitor::address();
    let id = mandate_to(&app, &application, &email, "Weekly veg box").await;
    browser.navigate(&format!("{origin}/mandates/{id}")).await;
    assert_eq!(browser.text_of("terms").await, "up to 25 GBP, weekly");
    let code_step = || {
        let (app, email, browser) = (&app, &email, &browser);
        async move {
            browser.click("send").await;
            browser.wait_for_text("status", "Code sent").await;
            let code = app.last_message(email).await["code"]
                .as_str()
                .unwrap()
                .to_owned();
            browser.fill("code", &code).await;
            browser.click("verify").await;
            browser.wait_for_text("status", "Address confirmed").await;
        }
    };
    code_step().await;
    // The merchant raises the amount while the page shows 25 GBP.
    let bytes = serde_json::to_vec(&json!({"amount": 250})).unwrap();
    let changed = app
        .signed(
            Method::PUT,
            &format!("/v1/service/mandates/{id}"),
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    json(changed, 200).await;
    browser.click("passkey").await;
    browser.wait_for_text("status", "reload the page").await;
    let reload_shown = browser
        .execute("return !document.getElementById('reload').hidden && document.getElementById('step-decide').hidden;")
        .await;
    assert_eq!(reload_shown, serde_json::Value::Bool(true));
    assert_eq!(
        status(&app, &application, &id).await,
        "pending_authorization"
    );
    browser.click("reload").await;
    browser
        .wait_for_text("terms", "up to 250 GBP, weekly")
        .await;
    app.advance(std::time::Duration::from_secs(61));
    code_step().await;
    browser.click("passkey").await;
    browser.wait_for_text("status", "Passkey confirmed").await;
    browser.click("approve").await;
    browser.wait_for_text("status", "Mandate authorised").await;
    assert_eq!(status(&app, &application, &id).await, "active");
    app.stop().await;
}

/// The signing page (issue 15): the signer names their address, confirms it with the emailed
/// code, sees the document, confirms with a passkey and signs — or declines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signers_sign_or_decline_on_the_hosted_page_with_a_passkey_in_the_browser() {
    let Some(browser) = Browser::start().await else {
        return;
    };
    browser.add_virtual_authenticator().await;
    let (app, origin) = app_on_localhost().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let email = PageVisitor::address();
    // A one-page PDF, as the signature tests make them.
    let pdf = b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[3 0 R]/Count 1>>endobj\n3 0 obj<</Type/Page/Parent 2 0 R/MediaBox[0 0 612 792]>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";
    let body = json!({
        "document": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, pdf),
        "signers": [{"email": email, "name": "Ada Signer"}],
    });
    let bytes = serde_json::to_vec(&body).unwrap();
    let created = app
        .signed(
            Method::POST,
            "/v1/signature/documents",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    let id = json(created, 201).await["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();

    browser.navigate(&format!("{origin}/sign/{id}")).await;
    browser.fill("email", &email).await;
    browser.click("send").await;
    browser.wait_for_text("status", "Code sent").await;
    let code = app.last_message(&email).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    browser.fill("code", &code).await;
    browser.click("verify").await;
    browser.wait_for_text("status", "Address confirmed").await;
    // The document is linked once the address is confirmed.
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let href = browser
            .execute("var a = document.getElementById('document'); return a.hidden ? '' : a.href;")
            .await;
        if href.as_str().is_some_and(|href| href.starts_with("blob:")) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "no document link");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let viewer = browser
        .execute("var v = document.getElementById('viewer'); return v.hidden ? '' : v.src;")
        .await;
    assert!(
        viewer.as_str().is_some_and(|src| src.starts_with("blob:")),
        "the document is shown in the page: {viewer}"
    );
    browser.click("passkey").await;
    browser.wait_for_text("status", "Passkey confirmed").await;
    browser.click("approve").await;
    browser.wait_for_text("status", "Signed.").await;
    let response = app
        .signed(
            Method::GET,
            &format!("/v1/signature/documents/{id}"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    let status = json(response, 200).await;
    assert_eq!(status["data"]["status"], "completed");
    assert_eq!(status["data"]["signers"][0]["biometricVerified"], true);

    // A second request, declined on the page.
    let other = PageVisitor::address();
    let mut declined_body = body.clone();
    declined_body["signers"] = json!([{"email": other, "name": "Bo Decliner"}]);
    let bytes = serde_json::to_vec(&declined_body).unwrap();
    let created = app
        .signed(
            Method::POST,
            "/v1/signature/documents",
            &application.sandbox_key,
            &application.secret,
            &bytes,
        )
        .send()
        .await
        .unwrap();
    let declined = json(created, 201).await["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();
    browser.navigate(&format!("{origin}/sign/{declined}")).await;
    browser.fill("email", &other).await;
    browser.click("send").await;
    browser.wait_for_text("status", "Code sent").await;
    let code = app.last_message(&other).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    browser.fill("code", &code).await;
    browser.click("verify").await;
    browser.wait_for_text("status", "Address confirmed").await;
    browser.click("passkey").await;
    browser.wait_for_text("status", "Passkey confirmed").await;
    browser.click("reject").await;
    browser.wait_for_text("status", "Declined.").await;
    let response = app
        .signed(
            Method::GET,
            &format!("/v1/signature/documents/{declined}"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(json(response, 200).await["data"]["status"], "declined");
    app.stop().await;
}
