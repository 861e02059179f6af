//! An end user with a software passkey, playing the mobile app over HTTP.

use idconsent_passkey_soft::SoftPasskey;
use reqwest::{Method, Response};
use serde_json::{Value, json};

use crate::scenario::unique;
use crate::{TestApp, json};

/// The WebAuthn origin test servers accept (`Config::for_tests`).
pub const ORIGIN: &str = "http://localhost:8080";

/// A phone, an app installation and a passkey.
#[allow(missing_debug_implementations)]
pub struct AppUser {
    pub phone: String,
    pub installation: String,
    pub passkey: SoftPasskey,
    pub enrollment_id: String,
    pub device_id: String,
}

impl AppUser {
    pub fn new() -> Self {
        Self {
            phone: format!("+1555{}", &unique()[..7]),
            installation: format!("install-{}", unique()),
            passkey: SoftPasskey::new().unwrap(),
            enrollment_id: String::new(),
            device_id: String::new(),
        }
    }

    /// A request from this user's app installation.
    pub fn request(&self, app: &TestApp, method: Method, path: &str) -> reqwest::RequestBuilder {
        app.client
            .request(method, app.url(path))
            .header("x-device-id", &self.installation)
    }

    pub async fn post(&self, app: &TestApp, path: &str, body: &Value) -> Response {
        self.request(app, Method::POST, path)
            .json(body)
            .send()
            .await
            .unwrap()
    }

    /// Starts an anonymous enrollment; returns the enrollment id.
    pub async fn start_enrollment(&mut self, app: &TestApp) -> String {
        let created = json(
            self.post(
                app,
                "/v1/enrollments",
                &json!({"phone": self.phone, "deviceName": "Test phone", "platform": "android"}),
            )
            .await,
            201,
        )
        .await;
        self.enrollment_id = created["data"]["enrollmentId"].as_str().unwrap().to_owned();
        self.enrollment_id.clone()
    }

    /// The SMS code from the dev mailbox.
    pub async fn code(&self, app: &TestApp) -> String {
        app.last_message(&self.phone).await["code"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// Checks the code and registers the passkey; returns the device id.
    pub async fn register(&mut self, app: &TestApp) -> String {
        let code = self.code(app).await;
        let begun = json(
            self.post(
                app,
                "/v1/auth/fido/register/begin",
                &json!({"enrollmentId": self.enrollment_id, "otp": code}),
            )
            .await,
            200,
        )
        .await;
        let credential = self
            .passkey
            .register(ORIGIN, &json!({"publicKey": begun["data"]["publicKey"]}))
            .unwrap();
        let registered = json(
            self.post(
                app,
                "/v1/auth/fido/register/complete",
                &json!({"challengeId": begun["data"]["challengeId"], "credential": credential}),
            )
            .await,
            201,
        )
        .await;
        self.device_id = registered["data"]["deviceId"].as_str().unwrap().to_owned();
        self.device_id.clone()
    }

    /// `authenticate/begin` for a purpose; the response's `data`.
    pub async fn begin(&self, app: &TestApp, purpose: &str, id: Option<&str>) -> Response {
        self.post(
            app,
            "/v1/auth/fido/authenticate/begin",
            &json!({"phone": self.phone, "purpose": {"type": purpose, "id": id}}),
        )
        .await
    }

    pub async fn begun(&self, app: &TestApp, purpose: &str, id: Option<&str>) -> Value {
        json(self.begin(app, purpose, id).await, 200).await["data"].clone()
    }

    /// The passkey's assertion for a begun challenge.
    pub fn sign(&mut self, begun: &Value) -> Value {
        self.passkey
            .authenticate(ORIGIN, &json!({"publicKey": begun["publicKey"]}))
            .unwrap()
    }

    /// Verifies the enrollment with an assertion (purpose `enrollment`).
    pub async fn verify(&mut self, app: &TestApp) -> Response {
        let begun = self
            .begun(app, "enrollment", Some(&self.enrollment_id.clone()))
            .await;
        let credential = self.sign(&begun);
        self.post(
            app,
            &format!("/v1/enrollments/{}/verify", self.enrollment_id),
            &json!({"challengeId": begun["challengeId"], "credential": credential}),
        )
        .await
    }

    /// A fully enrolled user.
    pub async fn enrolled(app: &TestApp) -> Self {
        let mut user = Self::new();
        user.start_enrollment(app).await;
        user.register(app).await;
        json(user.verify(app).await, 200).await;
        user
    }

    /// `authenticate/complete` with a credential for a begun challenge.
    pub async fn complete(
        &self,
        app: &TestApp,
        begun: &Value,
        credential: &Value,
        decision: &str,
    ) -> Response {
        self.post(
            app,
            "/v1/auth/fido/authenticate/complete",
            &json!({"challengeId": begun["challengeId"], "credential": credential, "decision": decision}),
        )
        .await
    }

    /// Signs in: `data { accessToken, refreshToken, … }`.
    pub async fn login(&mut self, app: &TestApp) -> Value {
        let begun = self.begun(app, "login", None).await;
        let credential = self.sign(&begun);
        json(
            self.post(
                app,
                "/v6/auth/login",
                &json!({"challengeId": begun["challengeId"], "credential": credential}),
            )
            .await,
            200,
        )
        .await["data"]
            .clone()
    }

    /// A request with an access token from this installation.
    pub fn authorized(
        &self,
        app: &TestApp,
        method: Method,
        path: &str,
        token: &Value,
    ) -> reqwest::RequestBuilder {
        self.request(app, method, path)
            .bearer_auth(token.as_str().unwrap())
    }
}

impl Default for AppUser {
    fn default() -> Self {
        Self::new()
    }
}
