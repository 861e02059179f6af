//! A recipient at a hosted approval page (`/mandates/{id}`), with a software passkey standing in
//! for the browser's authenticator: the page's JSON steps over HTTP.

use std::sync::Mutex;

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
    /// The hash of the context the page rendered (`data-context-hash`), once it was loaded.
    shown: Mutex<Option<String>>,
}

/// The `data-context-hash` a hosted page carries: the hash of the context it rendered.
pub fn rendered_hash(html: &str) -> Option<String> {
    let start = html.find("data-context-hash=\"")? + "data-context-hash=\"".len();
    let end = html[start..].find('"')?;
    Some(html[start..start + end].to_owned())
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
            shown: Mutex::new(None),
        }
    }

    /// Loads (or reloads) the page, as the browser does, and keeps the hash of what it shows.
    pub async fn load(&self, app: &TestApp) -> String {
        let page = app.get(&self.page).await;
        assert_eq!(page.status(), 200);
        let html = page.text().await.unwrap();
        *self.shown.lock().unwrap() = rendered_hash(&html);
        html
    }

    /// The hash the page rendered, loading the page first if nobody did.
    pub async fn shown(&self, app: &TestApp) -> Option<String> {
        let loaded = self.shown.lock().unwrap().clone();
        match loaded {
            Some(hash) => Some(hash),
            None => {
                self.load(app).await;
                self.shown.lock().unwrap().clone()
            }
        }
    }

    pub async fn post(&self, app: &TestApp, step: &str, body: &Value) -> Response {
        app.post_json(&format!("{}{step}", self.page), body).await
    }

    /// A step's body with the page's `contextHash`, as the page's script sends it.
    async fn with_shown(&self, app: &TestApp, mut body: Value) -> Value {
        if let Some(hash) = self.shown(app).await {
            body["contextHash"] = json!(hash);
        }
        body
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

    /// Makes a passkey in the "browser": the credential for the assertion step.
    pub async fn register_passkey(&mut self, app: &TestApp, token: &str) -> Value {
        let options = json(
            self.post(app, "/passkey/registration", &json!({"token": token}))
                .await,
            200,
        )
        .await;
        self.passkey
            .register(ORIGIN, &json!({"publicKey": options["data"]["publicKey"]}))
            .unwrap()
    }

    /// The assertion step with a new passkey's credential and the page's hash.
    pub async fn assertion_step(&self, app: &TestApp, token: &str, created: &Value) -> Response {
        let body = self
            .with_shown(app, json!({"token": token, "credential": created}))
            .await;
        self.post(app, "/passkey/assertion", &body).await
    }

    /// Makes a passkey and returns the assertion step's `data` (options, context, hash).
    pub async fn passkey_step(&mut self, app: &TestApp, token: &str) -> Value {
        let created = self.register_passkey(app, token).await;
        json(self.assertion_step(app, token, &created).await, 200).await["data"].clone()
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
        let body = self
            .with_shown(
                app,
                json!({"token": token, "decision": decision, "credential": credential}),
            )
            .await;
        self.post(app, "/decision", &body).await
    }
}
