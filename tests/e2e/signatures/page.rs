//! The hosted signing page's steps (issue 15) with a software passkey standing in for the
//! browser: each signer is emailed the link, confirms their address with an emailed code, sees
//! the document, confirms with a passkey, and signs — the last signature completes the request
//! and its certificate records who signed, from where, with a passkey.

use idconsent_e2e::enduser::ORIGIN;
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
}

impl Signer {
    fn at(id: &str, email: &'static str) -> Self {
        Self {
            email,
            page: format!("/sign/{id}"),
            passkey: SoftPasskey::new().unwrap(),
        }
    }

    async fn post(&self, app: &TestApp, step: &str, extra: Value) -> Response {
        let mut body = json!({"email": self.email});
        if let (Some(body), Some(extra)) = (body.as_object_mut(), extra.as_object()) {
            body.extend(extra.clone());
        }
        app.post_json(&format!("{}{step}", self.page), &body).await
    }

    async fn token(&self, app: &TestApp) -> String {
        json(self.post(app, "/code", json!({})).await, 202).await;
        let code = app.last_message(self.email).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        let confirmed = json(
            self.post(app, "/code/verify", json!({"code": code})).await,
            200,
        )
        .await;
        confirmed["data"]["token"].as_str().unwrap().to_owned()
    }

    /// The passkey steps; the assertion over the committed challenge and the context.
    async fn assertion(&mut self, app: &TestApp, token: &str) -> (Value, Value) {
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
        let step = json(
            self.post(
                app,
                "/passkey/assertion",
                json!({"token": token, "credential": created}),
            )
            .await,
            200,
        )
        .await;
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
        self.post(
            app,
            "/decision",
            json!({"token": token, "decision": decision, "credential": credential}),
        )
        .await
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
