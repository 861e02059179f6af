//! Scenario helpers: a registered merchant, a verified one, a live one, an application, signed
//! requests. Each step goes through the public HTTP API, as a merchant's integration would.

use base64::Engine;
use reqwest::{Method, RequestBuilder, Response};
use serde_json::{Value, json};

use crate::{TestApp, json};

/// A registered merchant's owner session.
#[derive(Debug, Clone)]
pub struct Merchant {
    pub id: String,
    pub token: String,
    pub email: String,
    pub phone: String,
}

/// An application with the credentials shown at creation.
#[derive(Debug, Clone)]
pub struct Application {
    pub id: String,
    pub client_id: String,
    pub sandbox_key: String,
    pub secret: String,
    pub webhook_secret: String,
}

/// A fresh value for each call, so tests never collide on unique emails or phones.
pub fn unique() -> String {
    let random: std::sync::Arc<dyn idconsent_kernel::RandomSource> =
        std::sync::Arc::new(idconsent_kernel::OsRandom);
    random.digits(9)
}

/// A tiny valid PDF and PNG for document uploads.
pub const PDF: &[u8] = b"%PDF-1.4\n1 0 obj<</Type/Catalog>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n";
pub const PNG: &[u8] =
    b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01\x08\x06\0\0\0\x1f\x15\xc4\x89";

pub fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

impl TestApp {
    /// A request with a merchant session.
    pub fn as_merchant(&self, method: Method, path: &str, token: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(token)
    }

    /// A request with the operator token.
    pub fn as_operator(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(self.admin_token())
    }

    /// The registration body for a new merchant.
    pub fn registration(&self) -> Value {
        let n = unique();
        json!({
            "businessName": "Example Shop",
            "contactName": "Ada Lovelace",
            "email": format!("owner-{n}@shop.example"),
            "password": "correct horse battery staple",
            "entityType": "llc",
            "registrationNumber": "HRB-42",
            "dateRegistered": "2019-03-04",
            "industry": "retail",
            "phone": format!("+1555{}", &n[..7]),
        })
    }

    pub async fn register_with(&self, body: &Value) -> Merchant {
        let registered = json(self.post_json("/v1/merchants/register", body).await, 201).await;
        Merchant {
            id: registered["data"]["merchant"]["id"]
                .as_str()
                .unwrap()
                .to_owned(),
            token: registered["data"]["token"].as_str().unwrap().to_owned(),
            email: body["email"].as_str().unwrap().to_owned(),
            phone: body["phone"].as_str().unwrap().to_owned(),
        }
    }

    pub async fn register_merchant(&self) -> Merchant {
        self.register_with(&self.registration()).await
    }

    /// The newest dev-mailbox message to an address.
    pub async fn last_message(&self, to: &str) -> Value {
        self.messages(to)
            .await
            .pop()
            .unwrap_or_else(|| panic!("no message to {to}"))
    }

    /// Every dev-mailbox message to an address, oldest first.
    pub async fn messages(&self, to: &str) -> Vec<Value> {
        let to = to.replace('+', "%2B");
        let mailbox = json(self.get(&format!("/v1/dev/messages?to={to}")).await, 200).await;
        mailbox["data"]["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// Confirms the email link and the phone code from the dev mailbox.
    pub async fn verify_contacts(&self, merchant: &Merchant) {
        let link = self.last_message(&merchant.email).await["link"]
            .as_str()
            .unwrap()
            .to_owned();
        let token = link.split("token=").nth(1).unwrap().to_owned();
        json(
            self.post_json("/v1/merchants/email/verify-link", &json!({"token": token}))
                .await,
            200,
        )
        .await;
        let code = self.last_message(&merchant.phone).await["code"]
            .as_str()
            .unwrap()
            .to_owned();
        let verified = self
            .as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
            .json(&json!({"code": code}))
            .send()
            .await
            .unwrap();
        json(verified, 200).await;
    }

    pub async fn upload(
        &self,
        merchant: &Merchant,
        kind: &str,
        mime: &str,
        content: &[u8],
    ) -> Response {
        self.as_merchant(Method::POST, "/v1/merchants/documents", &merchant.token)
            .json(&json!({
                "type": kind,
                "fileName": "document",
                "mimeType": mime,
                "size": content.len(),
                "contentBase64": base64::engine::general_purpose::STANDARD.encode(content),
            }))
            .send()
            .await
            .unwrap()
    }

    /// Everything go-live needs: verified contacts, profile, both required documents.
    pub async fn complete_onboarding(&self, merchant: &Merchant) {
        self.verify_contacts(merchant).await;
        let profile = self
            .as_merchant(Method::PATCH, "/v1/merchants/business", &merchant.token)
            .json(&json!({
                "address": "1 Main Street, Springfield",
                "usecase": "Passwordless sign-in and payment approval",
                "description": "Online shop for garden tools",
                "identityType": "passport",
                "identityNumber": "X1234567",
            }))
            .send()
            .await
            .unwrap();
        json(profile, 200).await;
        json(
            self.upload(merchant, "business_registration", "application/pdf", PDF)
                .await,
            201,
        )
        .await;
        json(
            self.upload(merchant, "representative_id", "image/png", PNG)
                .await,
            201,
        )
        .await;
    }

    pub async fn create_application(&self, merchant: &Merchant, body: &Value) -> Value {
        let response = self
            .as_merchant(Method::POST, "/v1/merchants/applications", &merchant.token)
            .json(body)
            .send()
            .await
            .unwrap();
        json(response, 201).await
    }

    /// A sandbox application with every request type, its callback on localhost.
    pub async fn application(&self, merchant: &Merchant) -> Application {
        self.application_calling(merchant, "http://127.0.0.1:9/hooks")
            .await
    }

    /// A sandbox application whose default webhook URL is `callback_url`.
    pub async fn application_calling(
        &self,
        merchant: &Merchant,
        callback_url: &str,
    ) -> Application {
        let created = self
            .create_application(
                merchant,
                &json!({
                    "name": "Checkout",
                    "callbackUrl": callback_url,
                    "redirectUris": ["https://shop.example/oauth/callback"],
                }),
            )
            .await;
        let application = &created["application"];
        Application {
            id: application["id"].as_str().unwrap().to_owned(),
            client_id: application["clientId"].as_str().unwrap().to_owned(),
            sandbox_key: application["credentials"]["sandbox"]["apiKey"]
                .as_str()
                .unwrap()
                .to_owned(),
            secret: application["credentials"]["sandbox"]["secret"]
                .as_str()
                .unwrap()
                .to_owned(),
            webhook_secret: application["webhookSecret"].as_str().unwrap().to_owned(),
        }
    }

    /// A merchant with one application, approved for live traffic; returns the live key.
    pub async fn live_merchant(&self) -> (Merchant, Application, String) {
        let merchant = self.register_merchant().await;
        let application = self.application(&merchant).await;
        self.complete_onboarding(&merchant).await;
        let submitted = self
            .as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
            .send()
            .await
            .unwrap();
        json(submitted, 202).await;
        let approved = self
            .as_operator(
                Method::POST,
                &format!("/v1/admin/merchants/{}/approve", merchant.id),
            )
            .send()
            .await
            .unwrap();
        json(approved, 200).await;
        let current = self
            .as_merchant(
                Method::GET,
                &format!("/v1/merchants/applications/{}", application.id),
                &merchant.token,
            )
            .send()
            .await
            .unwrap();
        let live_key = json(current, 200).await["application"]["credentials"]["live"]["apiKey"]
            .as_str()
            .unwrap()
            .to_owned();
        (merchant, application, live_key)
    }

    /// A request signed as CONTRACT §2.1 says, at `timestamp` (ms), over exactly `body`.
    pub fn signed_at(
        &self,
        method: Method,
        path: &str,
        api_key: &str,
        secret: &str,
        body: &[u8],
        timestamp: i64,
    ) -> RequestBuilder {
        self.signed_to(&self.base, method, path, api_key, secret, body, timestamp)
    }

    /// [`TestApp::signed_at`] to another server process at `base` (same database and keys).
    #[allow(clippy::too_many_arguments)]
    pub fn signed_to(
        &self,
        base: &str,
        method: Method,
        path: &str,
        api_key: &str,
        secret: &str,
        body: &[u8],
        timestamp: i64,
    ) -> RequestBuilder {
        let timestamp = timestamp.to_string();
        let signature =
            idconsent_auth_hmac::sign_request(secret.as_bytes(), api_key, &timestamp, body);
        let mut request = self
            .client
            .request(method, format!("{base}{path}"))
            .header("x-api-key", api_key)
            .header("x-timestamp", timestamp)
            .header("x-signature", signature);
        if !body.is_empty() {
            request = request
                .header("content-type", "application/json")
                .body(body.to_vec());
        }
        request
    }

    /// A request signed now.
    pub fn signed(
        &self,
        method: Method,
        path: &str,
        api_key: &str,
        secret: &str,
        body: &[u8],
    ) -> RequestBuilder {
        self.signed_at(method, path, api_key, secret, body, self.signing_millis())
    }
}
