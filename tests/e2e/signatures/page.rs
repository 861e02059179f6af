//! The hosted signing page's steps (issue 15) with a software passkey standing in for the
//! browser: each signer is emailed the link, confirms their address with an emailed code, sees
//! the document, confirms with a passkey, and signs — the last signature completes the request
//! and its certificate records who signed, from where, with a passkey.

use std::sync::Mutex;
use std::time::Duration;

use futures_util::future::join_all;
use idconsent_e2e::enduser::ORIGIN;
use idconsent_e2e::hosted::rendered_hash;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json};
use idconsent_passkey_soft::SoftPasskey;
use reqwest::Response;
use serde_json::{Value, json};

use super::documents::{pdf, pdfsig};
use super::{body, create, read};

/// A signer at `/sign/{id}`.
struct Signer {
    email: &'static str,
    page: String,
    passkey: SoftPasskey,
    /// The hash the page rendered (`data-context-hash`), once loaded.
    shown: Mutex<Option<String>>,
}

impl Signer {
    fn at(id: &str, email: &'static str) -> Self {
        Self {
            email,
            page: format!("/sign/{id}"),
            passkey: SoftPasskey::new().unwrap(),
            shown: Mutex::new(None),
        }
    }

    async fn post(&self, app: &TestApp, step: &str, extra: Value) -> Response {
        let mut body = json!({"email": self.email});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        app.post_json(&format!("{}{step}", self.page), &body).await
    }

    /// The page's hash, as its script sends it with the passkey and decision steps (the page
    /// is loaded first if nobody did).
    async fn shown(&self, app: &TestApp) -> Option<String> {
        let loaded = self.shown.lock().unwrap().clone();
        if loaded.is_some() {
            return loaded;
        }
        let page = app.get(&self.page).await;
        assert_eq!(page.status(), 200);
        let hash = rendered_hash(&page.text().await.unwrap());
        *self.shown.lock().unwrap() = hash.clone();
        hash
    }

    /// As if the page had rendered `hash`.
    fn pretend_shown(&self, hash: &str) {
        *self.shown.lock().unwrap() = Some(hash.to_owned());
    }

    async fn with_shown(&self, app: &TestApp, mut body: Value) -> Value {
        if let Some(hash) = self.shown(app).await {
            body["contextHash"] = json!(hash);
        }
        body
    }

    async fn code(&self, app: &TestApp) -> String {
        json(self.post(app, "/code", json!({})).await, 202).await;
        app.last_message(&self.email.trim().to_lowercase()).await["code"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    async fn token(&self, app: &TestApp) -> String {
        let code = self.code(app).await;
        let confirmed = json(
            self.post(app, "/code/verify", json!({"code": code})).await,
            200,
        )
        .await;
        confirmed["data"]["token"].as_str().unwrap().to_owned()
    }

    /// The assertion step after making a passkey.
    async fn assertion_step(&mut self, app: &TestApp, token: &str) -> Response {
        let options = json(
            self.post(app, "/passkey/registration", json!({"token": token}))
                .await,
            200,
        )
        .await;
        let created = self
            .passkey
            .register(ORIGIN, &json!({"publicKey": options["data"]["publicKey"]}))
            .unwrap();
        let body = self
            .with_shown(app, json!({"token": token, "credential": created}))
            .await;
        self.post(app, "/passkey/assertion", body).await
    }

    /// The passkey steps; the assertion over the committed challenge and the context.
    async fn assertion(&mut self, app: &TestApp, token: &str) -> (Value, Value) {
        let step = json(self.assertion_step(app, token).await, 200).await;
        let assertion = self
            .passkey
            .authenticate(ORIGIN, &json!({"publicKey": step["data"]["publicKey"]}))
            .unwrap();
        (assertion, step["data"]["context"].clone())
    }

    async fn decide(
        &self,
        app: &TestApp,
        token: &str,
        decision: &str,
        credential: Value,
    ) -> Response {
        let body = self
            .with_shown(
                app,
                json!({"token": token, "decision": decision, "credential": credential}),
            )
            .await;
        self.post(app, "/decision", body).await
    }
}

async fn request_for(
    app: &TestApp,
    application: &Application,
    signers: &[(&str, &str)],
    callback: &str,
    biometric: bool,
) -> String {
    let mut request = body(&pdf(1, ""), signers);
    request["callbackUrl"] = json!(callback);
    request["requireBiometric"] = json!(biometric);
    let created = json(
        create(app, application, &application.sandbox_key, &request).await,
        201,
    )
    .await;
    created["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned()
}

pub async fn signers_sign_on_the_hosted_page_with_a_passkey(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let id = request_for(
        &app,
        &application,
        &[
            ("ann@example.com", "Ann Lee"),
            ("bo@example.com", "Bo Berg"),
        ],
        &receiver.url,
        true,
    )
    .await;
    // Each signer is emailed the page's link.
    for email in ["ann@example.com", "bo@example.com"] {
        let invitation = app.last_message(email).await;
        assert!(
            invitation["link"]
                .as_str()
                .unwrap()
                .ends_with(&format!("/sign/{id}")),
            "{invitation}"
        );
    }
    let page = app.get(&format!("/sign/{id}")).await;
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        html.contains("1 page(s)") && html.contains("2 signer(s)"),
        "{html}"
    );

    // Someone who is not a signer gets nothing sent.
    let eve = Signer::at(&id, "eve@example.com");
    error(eve.post(&app, "/code", json!({})).await, 404, "not_found").await;

    let mut ann = Signer::at(&id, "ann@example.com");
    let token = ann.token(&app).await;
    // The document, only with the token.
    let document = ann.post(&app, "/document", json!({"token": token})).await;
    assert_eq!(document.status(), 200);
    assert_eq!(document.headers()["content-type"], "application/pdf");
    assert!(document.bytes().await.unwrap().starts_with(b"%PDF-"));
    error(
        ann.post(&app, "/document", json!({"token": "ab".repeat(32)}))
            .await,
        401,
        "unauthorized",
    )
    .await;
    // requireBiometric: no answer without the passkey.
    error(
        ann.decide(&app, &token, "approve", Value::Null).await,
        401,
        "unauthorized",
    )
    .await;
    let (assertion, context) = ann.assertion(&app, &token).await;
    assert_eq!(context["type"], "signature");
    assert_eq!(context["signer"]["email"], "ann@example.com");
    let answered = json(
        ann.decide(&app, &token, "approve", assertion.clone()).await,
        200,
    )
    .await;
    assert_eq!(answered["data"]["status"], "pending");
    // Ann answered: another token of hers finds nothing to decide.
    error(ann.post(&app, "/code", json!({})).await, 409, "conflict").await;

    let mut bo = Signer::at(&id, "bo@example.com");
    let token = bo.token(&app).await;
    let (assertion, _) = bo.assertion(&app, &token).await;
    let answered = json(bo.decide(&app, &token, "approve", assertion).await, 200).await;
    assert_eq!(answered["data"]["status"], "completed");
    let completed = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| r.event_type() == "signature.completed")
                .cloned()
        })
        .await;
    let signers = &completed.json()["data"]["signers"];
    for signer in signers.as_array().unwrap() {
        assert_eq!(signer["status"], "signed");
        assert_eq!(signer["biometricVerified"], true);
        assert_eq!(signer["ipAddress"], "127.0.0.1");
    }
    // The certificate is valid and its audit trail says so.
    let path = format!("/v1/signature/documents/{id}/certificate");
    let certificate = read(&app, &application, &application.sandbox_key, &path).await;
    assert_eq!(certificate.status(), 200);
    let signed = certificate.bytes().await.unwrap();
    if let Some(report) = pdfsig(&signed) {
        assert!(report.contains("Signature is Valid"), "{report}");
    }
    let closed = app.get(&format!("/sign/{id}")).await;
    assert_eq!(closed.status(), 409);
    app.stop().await;
}

pub async fn a_signer_declines_and_biometrics_can_be_waived(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    // Without requireBiometric the code alone lets a signer answer.
    let id = request_for(
        &app,
        &application,
        &[("cy@example.com", "Cy Dee")],
        &receiver.url,
        false,
    )
    .await;
    let cy = Signer::at(&id, "cy@example.com");
    let token = cy.token(&app).await;
    let answered = json(cy.decide(&app, &token, "approve", Value::Null).await, 200).await;
    assert_eq!(answered["data"]["status"], "completed");
    let status = json(
        read(
            &app,
            &application,
            &application.sandbox_key,
            &format!("/v1/signature/documents/{id}"),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(status["data"]["signers"][0]["biometricVerified"], false);

    // A decline ends the request.
    let id = request_for(
        &app,
        &application,
        &[("di@example.com", "Di Ek"), ("ed@example.com", "Ed Fo")],
        &receiver.url,
        true,
    )
    .await;
    let mut di = Signer::at(&id, "di@example.com");
    let token = di.token(&app).await;
    let (assertion, _) = di.assertion(&app, &token).await;
    let answered = json(di.decide(&app, &token, "reject", assertion).await, 200).await;
    assert_eq!(answered["data"]["status"], "declined");
    let ed = Signer::at(&id, "ed@example.com");
    error(ed.post(&app, "/code", json!({})).await, 409, "conflict").await;
    app.stop().await;
}

/// Issue 31: the attempts were counted per spelling of the address, so after five wrong codes
/// had locked `ann@example.com`, `ann@Example.com` got a fresh code and five more guesses. The
/// lock belongs to the signer, however the address is typed.
pub async fn every_spelling_of_a_signer_shares_one_lock(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let signers = [
        ("ann@example.com", "Ann Lee"),
        ("bo@example.com", "Bo Berg"),
    ];
    let id = request_for(&app, &application, &signers, &receiver.url, true).await;
    let ann = Signer::at(&id, "ann@example.com");
    let code = ann.code(&app).await;
    let wrong = if code == "000000" { "111111" } else { "000000" };
    for _ in 0..4 {
        error(
            ann.post(&app, "/code/verify", json!({"code": wrong})).await,
            401,
            "unauthorized",
        )
        .await;
    }
    error(
        ann.post(&app, "/code/verify", json!({"code": wrong})).await,
        429,
        "rate_limited",
    )
    .await;
    for spelling in [
        "ann@Example.com",
        "ANN@EXAMPLE.COM",
        "Ann@example.com",
        " ann@example.com ",
    ] {
        let other = Signer::at(&id, spelling);
        error(
            other.post(&app, "/code", json!({})).await,
            429,
            "rate_limited",
        )
        .await;
        error(
            other
                .post(&app, "/code/verify", json!({"code": code}))
                .await,
            429,
            "rate_limited",
        )
        .await;
    }
    // One code was ever sent to Ann.
    assert_eq!(
        app.messages("ann@example.com").await.len(),
        2,
        "the invitation and one code"
    );
    // Bo is another signer: his attempts are his own.
    let bo = Signer::at(&id, "bo@example.com");
    assert_eq!(bo.token(&app).await.len(), 64);
    // A spelling of the request id names nothing.
    let body = id.trim_start_matches("sr_");
    for other in [format!("SR_{body}"), format!("sr_{}", body.to_lowercase())] {
        let page = format!("/sign/{other}");
        error(app.get(&page).await, 404, "not_found").await;
        error(
            app.post_json(
                &format!("{page}/code"),
                &json!({"email": "ann@example.com"}),
            )
            .await,
            404,
            "not_found",
        )
        .await;
    }
    app.stop().await;
}

/// Wrong codes are counted across resends and spellings: ten per signer and request in 24
/// hours, then even the right code buys nothing.
pub async fn wrong_codes_over_resends_and_spellings_are_counted_ten_a_day(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let signers = [("ann@example.com", "Ann Lee")];
    let id = request_for(&app, &application, &signers, &receiver.url, true).await;
    let rounds: [(&'static str, &'static str, usize); 3] = [
        ("ann@example.com", "ann@example.com", 4),
        ("Ann@Example.COM", "ANN@example.com", 4),
        ("ann@example.com", "ann@EXAMPLE.com", 2),
    ];
    let mut code = String::new();
    for (asks, guesses, wrong_codes) in rounds {
        code = Signer::at(&id, asks).code(&app).await;
        let wrong = if code == "000000" { "111111" } else { "000000" };
        let guesser = Signer::at(&id, guesses);
        for _ in 0..wrong_codes {
            let refused = guesser
                .post(&app, "/code/verify", json!({"code": wrong}))
                .await;
            assert!(
                [401, 429].contains(&refused.status().as_u16()),
                "{}",
                refused.status()
            );
        }
        app.advance(Duration::from_secs(61));
    }
    let right = Signer::at(&id, "ann@example.com")
        .post(&app, "/code/verify", json!({"code": code}))
        .await;
    assert_eq!(right.status(), 429, "the right code bought a page token");
    app.stop().await;
}

/// Twenty concurrent wrong codes, typed in four spellings after asking for a code in each: each
/// guess counts against the one signer, so four are compared and the fifth locks.
pub async fn concurrent_guesses_in_any_spelling_count_against_one_signer(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let signers = [("ann@example.com", "Ann Lee")];
    let id = request_for(&app, &application, &signers, &receiver.url, true).await;
    let spellings = [
        "ann@example.com",
        "ann@Example.com",
        "ANN@EXAMPLE.COM",
        "Ann@example.com",
    ];
    let guessers: Vec<Signer> = spellings.iter().map(|s| Signer::at(&id, s)).collect();
    for guesser in &guessers {
        guesser.post(&app, "/code", json!({})).await;
    }
    let codes: Vec<String> = app
        .messages("ann@example.com")
        .await
        .iter()
        .filter_map(|message| message["code"].as_str().map(str::to_owned))
        .collect();
    let wrong = (0..1_000_000)
        .map(|n| format!("{n:06}"))
        .find(|guess| !codes.contains(guess))
        .unwrap();
    let guesses = (0..20).map(|n| {
        let (app, guesser, wrong) = (&app, &guessers[n % guessers.len()], &wrong);
        async move {
            guesser
                .post(app, "/code/verify", json!({"code": wrong}))
                .await
                .status()
                .as_u16()
        }
    });
    let statuses = join_all(guesses).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 401).count(),
        4,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    for code in &codes {
        error(
            guessers[0]
                .post(&app, "/code/verify", json!({"code": code}))
                .await,
            429,
            "rate_limited",
        )
        .await;
    }
    app.stop().await;
}

/// Issue 31, item 3 for signatures: the signing page carries the hash of what it rendered, the
/// passkey and decision steps send it, and a hash that is not the request's as it is now is
/// refused (409) without answering.
pub async fn the_signing_page_answers_only_for_what_it_rendered(app: TestApp) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let signers = [
        ("ann@example.com", "Ann Lee"),
        ("bo@example.com", "Bo Berg"),
    ];
    let id = request_for(&app, &application, &signers, &receiver.url, true).await;
    let page = app.get(&format!("/sign/{id}")).await.text().await.unwrap();
    let shown = rendered_hash(&page).expect("the page carries data-context-hash");
    assert_eq!(shown.len(), 64);
    // Another request's page is not this one.
    let other = request_for(&app, &application, &signers, &receiver.url, false).await;
    let other_page = app
        .get(&format!("/sign/{other}"))
        .await
        .text()
        .await
        .unwrap();
    let elsewhere = rendered_hash(&other_page).unwrap();
    assert_ne!(elsewhere, shown);

    let mut ann = Signer::at(&id, "ann@example.com");
    let token = ann.token(&app).await;
    ann.pretend_shown(&elsewhere);
    let refused = error(ann.assertion_step(&app, &token).await, 409, "conflict").await;
    assert_eq!(refused["details"][0]["field"], "contextHash", "{refused}");
    ann.pretend_shown(&shown);
    let (assertion, _) = ann.assertion(&app, &token).await;
    ann.pretend_shown(&elsewhere);
    error(
        ann.decide(&app, &token, "approve", assertion.clone()).await,
        409,
        "conflict",
    )
    .await;
    let status = |id: String| {
        let (app, application) = (&app, &application);
        async move {
            json(
                read(
                    app,
                    application,
                    &application.sandbox_key,
                    &format!("/v1/signature/documents/{id}"),
                )
                .await,
                200,
            )
            .await["data"]
                .clone()
        }
    };
    assert_eq!(
        status(id.clone()).await["signers"][0]["status"],
        "awaiting_signature"
    );
    ann.pretend_shown(&shown);
    json(ann.decide(&app, &token, "approve", assertion).await, 200).await;
    assert_eq!(status(id.clone()).await["signers"][0]["status"], "signed");

    // Without a passkey step too: the decision carries the hash.
    let ann_elsewhere = Signer::at(&other, "ann@example.com");
    let token = ann_elsewhere.token(&app).await;
    ann_elsewhere.pretend_shown(&shown);
    error(
        ann_elsewhere
            .decide(&app, &token, "approve", Value::Null)
            .await,
        409,
        "conflict",
    )
    .await;
    ann_elsewhere.pretend_shown(&elsewhere);
    json(
        ann_elsewhere
            .decide(&app, &token, "approve", Value::Null)
            .await,
        200,
    )
    .await;
    app.stop().await;
}
