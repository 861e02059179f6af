//! The system routes, merchant onboarding, the team, applications and the operator's review.

use std::time::Duration;

use idconsent_e2e::TestApp;
use idconsent_e2e::scenario::{PDF, PNG};
use reqwest::Method;
use serde_json::{Value, json};

use super::Contract;

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    contract
        .response("GET /healthz", "", app.get("/healthz").await)
        .await;
    // Readiness names the backend: one snapshot each.
    contract
        .response(
            "GET /readyz",
            app.backend.as_str(),
            app.get("/readyz").await,
        )
        .await;

    // Registration, sign-in and the two verifications.
    let registration = app.registration();
    let registered = contract
        .response(
            "POST /v1/merchants/register",
            "",
            app.post_json("/v1/merchants/register", &registration).await,
        )
        .await;
    let text = |value: &Value| value.as_str().unwrap().to_owned();
    let merchant_id = text(&registered["data"]["merchant"]["id"]);
    let email = text(&registration["email"]);
    let phone = text(&registration["phone"]);
    let mut refused = registration.clone();
    refused["phone"] = json!("555");
    refused["email"] = json!("another@shop.example");
    contract
        .response(
            "POST /v1/merchants/register",
            "invalid phone",
            app.post_json("/v1/merchants/register", &refused).await,
        )
        .await;
    let signed_in = contract
        .response(
            "POST /v1/merchants/login",
            "",
            app.post_json(
                "/v1/merchants/login",
                &json!({"email": email, "password": registration["password"]}),
            )
            .await,
        )
        .await;
    let token = text(&signed_in["data"]["token"]);
    let merchant = |method: Method, path: &str| app.as_merchant(method, path, &token);
    // The dispatcher delivers in the background: wait for it, so the snapshot does not depend
    // on who wins the race (`queued` vs `delivered`).
    let mailbox = format!("/v1/dev/messages?to={}", phone.replace('+', "%2B"));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let delivered = loop {
        let listed = idconsent_e2e::json(app.get(&mailbox).await, 200).await;
        if listed["data"]["messages"][0]["status"] == "delivered" {
            break listed;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not delivered: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    contract.body("GET /v1/dev/messages", 200, "sms code", &delivered);

    // Resends are allowed once a minute has passed.
    app.advance(Duration::from_secs(61));
    contract
        .response(
            "POST /v1/merchants/email/resend",
            "",
            merchant(Method::POST, "/v1/merchants/email/resend")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/merchants/phone/resend",
            "",
            merchant(Method::POST, "/v1/merchants/phone/resend")
                .send()
                .await
                .unwrap(),
        )
        .await;
    let link = text(&app.last_message(&email).await["link"]);
    let link_token = link.split("token=").nth(1).unwrap().to_owned();
    contract
        .response(
            "POST /v1/merchants/email/verify-link",
            "",
            app.post_json(
                "/v1/merchants/email/verify-link",
                &json!({"token": link_token}),
            )
            .await,
        )
        .await;
    let code = text(&app.last_message(&phone).await["code"]);
    contract
        .response(
            "POST /v1/merchants/phone/verify",
            "",
            merchant(Method::POST, "/v1/merchants/phone/verify")
                .json(&json!({"code": code}))
                .send()
                .await
                .unwrap(),
        )
        .await;

    // The profile, the documents and the go-live review.
    contract
        .response(
            "PATCH /v1/merchants/business",
            "",
            merchant(Method::PATCH, "/v1/merchants/business")
                .json(&json!({
                    "address": "1 Main Street, Springfield",
                    "usecase": "Passwordless sign-in and payment approval",
                    "description": "Online shop for garden tools",
                    "identityType": "passport",
                    "identityNumber": "X1234567",
                }))
                .send()
                .await
                .unwrap(),
        )
        .await;
    let registered = app_merchant(&merchant_id, &token, &email, &phone);
    contract
        .response(
            "POST /v1/merchants/documents",
            "",
            app.upload(&registered, "business_registration", "application/pdf", PDF)
                .await,
        )
        .await;
    app.upload(&registered, "representative_id", "image/png", PNG)
        .await;
    let application = app
        .create_application(
            &registered,
            &json!({
                "name": "Checkout",
                "callbackUrl": "https://shop.example/hooks",
                "redirectUris": ["https://shop.example/oauth/callback"],
            }),
        )
        .await;
    contract.body("POST /v1/merchants/applications", 201, "", &application);
    let application_id = text(&application["application"]["id"]);
    contract
        .response(
            "GET /v1/merchants/me",
            "",
            merchant(Method::GET, "/v1/merchants/me")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/merchants/go-live",
            "",
            merchant(Method::POST, "/v1/merchants/go-live")
                .send()
                .await
                .unwrap(),
        )
        .await;
    let operator = |method: Method, path: &str| app.as_operator(method, path);
    contract
        .response(
            "GET /v1/admin/merchants",
            "in review",
            operator(Method::GET, "/v1/admin/merchants?status=in_review")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/admin/merchants/{id}",
            "",
            operator(Method::GET, &format!("/v1/admin/merchants/{merchant_id}"))
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/admin/merchants/{id}/reject",
            "",
            operator(
                Method::POST,
                &format!("/v1/admin/merchants/{merchant_id}/reject"),
            )
            .json(&json!({"reason": "The registration certificate is unreadable"}))
            .send()
            .await
            .unwrap(),
        )
        .await;
    app.upload(&registered, "business_registration", "application/pdf", PDF)
        .await;
    merchant(Method::POST, "/v1/merchants/go-live")
        .send()
        .await
        .unwrap();
    contract
        .response(
            "POST /v1/admin/merchants/{id}/approve",
            "",
            operator(
                Method::POST,
                &format!("/v1/admin/merchants/{merchant_id}/approve"),
            )
            .send()
            .await
            .unwrap(),
        )
        .await;

    // Applications, with live credentials now.
    let path = format!("/v1/merchants/applications/{application_id}");
    contract
        .response(
            "GET /v1/merchants/applications",
            "",
            merchant(Method::GET, "/v1/merchants/applications")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/merchants/applications/{id}",
            "",
            merchant(Method::GET, &path).send().await.unwrap(),
        )
        .await;
    contract
        .response(
            "PATCH /v1/merchants/applications/{id}",
            "",
            merchant(Method::PATCH, &path)
                .json(&json!({"name": "Checkout (web)", "requestTypes": ["LOGIN", "OAUTH"]}))
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/merchants/applications/{id}/rotate-key",
            "",
            merchant(Method::POST, &format!("{path}/rotate-key"))
                .json(&json!({"environment": "live"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/merchants/applications/{id}/rotate-webhook-secret",
            "",
            merchant(Method::POST, &format!("{path}/rotate-webhook-secret"))
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/merchants/applications/{id}/rotate-secret",
            "",
            merchant(Method::POST, &format!("{path}/rotate-secret"))
                .send()
                .await
                .unwrap(),
        )
        .await;

    // The team.
    let invited = contract
        .response(
            "POST /v1/merchants/users",
            "",
            merchant(Method::POST, "/v1/merchants/users")
                .json(&json!({"email": "dev@shop.example", "name": "Grace Hopper", "role": "developer"}))
                .send()
                .await
                .unwrap(),
        )
        .await;
    let invitation = text(&app.last_message("dev@shop.example").await["link"]);
    contract
        .response(
            "POST /v1/merchants/users/accept",
            "",
            app.post_json(
                "/v1/merchants/users/accept",
                &json!({
                    "token": invitation.split("token=").nth(1).unwrap(),
                    "password": "another long passphrase",
                }),
            )
            .await,
        )
        .await;
    contract
        .response(
            "GET /v1/merchants/users",
            "",
            merchant(Method::GET, "/v1/merchants/users")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "DELETE /v1/merchants/users/{id}",
            "",
            merchant(
                Method::DELETE,
                &format!(
                    "/v1/merchants/users/{}",
                    text(&invited["data"]["user"]["id"])
                ),
            )
            .send()
            .await
            .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/merchants/me",
            "no session",
            app.get("/v1/merchants/me").await,
        )
        .await;

    // The operator's test message.
    contract
        .response(
            "POST /v1/admin/notifications/test",
            "",
            operator(Method::POST, "/v1/admin/notifications/test")
                .json(&json!({"to": "ops@shop.example", "text": "Hello from idconsent"}))
                .send()
                .await
                .unwrap(),
        )
        .await;

    // The OAuth signing keys.
    contract
        .response(
            "POST /v1/admin/oauth-keys/rotate",
            "",
            operator(Method::POST, "/v1/admin/oauth-keys/rotate")
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/admin/oauth-keys",
            "after a rotation",
            operator(Method::GET, "/v1/admin/oauth-keys")
                .send()
                .await
                .unwrap(),
        )
        .await;
}

fn app_merchant(
    id: &str,
    token: &str,
    email: &str,
    phone: &str,
) -> idconsent_e2e::scenario::Merchant {
    idconsent_e2e::scenario::Merchant {
        id: id.to_owned(),
        token: token.to_owned(),
        email: email.to_owned(),
        phone: phone.to_owned(),
    }
}
