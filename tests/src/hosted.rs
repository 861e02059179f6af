//! A recipient at a hosted approval page (`/mandates/{id}`), with a software passkey standing in
//! for the browser's authenticator: the page's JSON steps over HTTP.

use idconsent_passkey_soft::SoftPasskey;
use reqwest::Response;
use serde_json::{Value, json};

use crate::enduser::ORIGIN;
use crate::scenario::unique;
use crate::{TestApp, json};

#[allow(missing_debug_implementations)]
pub struct PageVisitor {
    pub email: String,
    pub passkey: SoftPasskey,
    /// `/mandates/md_…`
    pub page: String,
}

impl PageVisitor {
    /// A fresh address, for a page not known yet.
    pub fn address() -> String {
        format!("signer-{}@example.com", unique())
    }

    pub fn at(email: &str, page: &str) -> Self {
        Self {
            email: email.to_owned(),
            passkey: SoftPasskey::new().unwrap(),
            page: page.to_owned(),
        }
    }

    pub async fn post(&self, app: &TestApp, step: &str, body: &Value) -> Response {
        app.post_json(&format!("{}{step}", self.page), body).await
    }

    /// Asks for a code and reads it from the dev mailbox.
    pub async fn code(&self, app: &TestApp) -> String {
        json(self.post(app, "/code", &json!({})).await, 202).await;
        app.last_message(&self.email).await["code"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Code → page token.
    pub async fn token(&self, app: &TestApp) -> String {
        let code = self.code(app).await;
        let confirmed = json(
            self.post(app, "/code/verify", &json!({"code": code})).await,
            200,
        )
        .await;
        confirmed["data"]["token"].as_str().unwrap().to_owned()
    }

    /// Makes a passkey and returns the assertion step's `data` (options, context, hash).
    pub async fn passkey_step(&mut self, app: &TestApp, token: &str) -> Value {
        let options = json(
            self.post(app, "/passkey/registration", &json!({"token": token}))
                .await,
            200,
        )
        .await;
        let created = self
            .passkey
            .register(ORIGIN, &json!({"publicKey": options["data"]["publicKey"]}))
            .unwrap();
        json(
            self.post(
                app,
                "/passkey/assertion",
                &json!({"token": token, "credential": created}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone()
    }

    /// The passkey's assertion for the step's options.
    pub fn assert(&mut self, step: &Value) -> Value {
        self.passkey
            .authenticate(ORIGIN, &json!({"publicKey": step["publicKey"]}))
            .unwrap()
    }

    pub async fn decide(
        &self,
        app: &TestApp,
        token: &str,
        decision: &str,
        credential: &Value,
    ) -> Response {
        self.post(
            app,
            "/decision",
            &json!({"token": token, "decision": decision, "credential": credential}),
        )
        .await
    }
}
