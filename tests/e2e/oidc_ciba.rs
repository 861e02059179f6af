//! CIBA poll mode (issue 34, ADR 0043) over real HTTP on both backends: the merchant's server
//! asks a phone, the user decides in the app with their passkey, the client polls. The
//! service's clock is moved forward between polls instead of sleeping.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use idconsent_e2e::TestApp;
use idconsent_e2e::enduser::AppUser;
use reqwest::Response;
use serde_json::Value;

use super::oidc::{Client, client, with_form};

crate::oidc_on_both_backends!(
    the_client_polls_until_the_user_approves_in_the_app,
    a_declined_or_expired_request_says_so,
    bad_backchannel_requests_are_refused,
);

async fn form(app: &TestApp, client: &Client, path: &str, fields: &[(&str, &str)]) -> Response {
    with_form(
        app.client
            .post(app.url(path))
            .basic_auth(&client.client_id, Some(&client.secret)),
        fields,
    )
    .send()
    .await
    .unwrap()
}

async fn start(app: &TestApp, client: &Client, phone: &str, binding: &str) -> Value {
    let response = form(
        app,
        client,
        "/oauth2/bc-authorize",
        &[
            ("scope", "openid phone"),
            ("login_hint", phone),
            ("binding_message", binding),
        ],
    )
    .await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

async fn poll(app: &TestApp, client: &Client, auth_req_id: &str) -> (u16, Value) {
    let response = form(
        app,
        client,
        "/oauth2/token",
        &[
            ("grant_type", "urn:openid:params:grant-type:ciba"),
            ("auth_req_id", auth_req_id),
        ],
    )
    .await;
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn expect_error(app: &TestApp, client: &Client, auth_req_id: &str, error: &str) {
    let (status, body) = poll(app, client, auth_req_id).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some(error)),
        "{body}"
    );
}

async fn the_client_polls_until_the_user_approves_in_the_app(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let mut user = AppUser::enrolled(&app).await;
    let started = start(&app, &client, &user.phone, "Order 42 at Checkout").await;
    assert_eq!(started["interval"], 5);
    let expires_in = started["expires_in"].as_u64().unwrap();
    assert!(expires_in > 0 && expires_in <= 300);
    let id = started["auth_req_id"].as_str().unwrap().to_owned();

    expect_error(&app, &client, &id, "authorization_pending").await;
    // Faster than the interval.
    expect_error(&app, &client, &id, "slow_down").await;
    app.advance(Duration::from_secs(5));
    expect_error(&app, &client, &id, "authorization_pending").await;

    // The app shows the binding message, and the passkey approves.
    let begun = user.begun(&app, "consent", Some(&id)).await;
    assert!(
        begun["context"]
            .to_string()
            .contains("Order 42 at Checkout"),
        "{begun}"
    );
    let credential = user.sign(&begun);
    idconsent_e2e::json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;

    app.advance(Duration::from_secs(5));
    let (status, tokens) = poll(&app, &client, &id).await;
    assert_eq!(status, 200, "{tokens}");
    assert_eq!(tokens["token_type"], "Bearer");
    assert!(
        tokens["refresh_token"]
            .as_str()
            .unwrap()
            .starts_with("ort_")
    );
    let payload = tokens["id_token"]
        .as_str()
        .unwrap()
        .split('.')
        .nth(1)
        .unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).unwrap()).unwrap();
    assert_eq!(claims["aud"], client.client_id.as_str());
    assert_eq!(claims["phone_number"], user.phone.as_str());
    assert_ne!(claims["sub"], user.phone.as_str());
    assert!(claims.get("nonce").is_none());
    let info: Value = app
        .client
        .get(app.url("/oauth2/userinfo"))
        .bearer_auth(tokens["access_token"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(info["sub"], claims["sub"]);

    // The tokens are issued once; another client never sees the request.
    app.advance(Duration::from_secs(5));
    expect_error(&app, &client, &id, "invalid_grant").await;
    let other = super::oidc::client(&app, "client_secret_basic").await;
    expect_error(&app, &other, &id, "invalid_grant").await;
}

async fn a_declined_or_expired_request_says_so(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let mut user = AppUser::enrolled(&app).await;
    let declined = start(&app, &client, &user.phone, "Decline me").await;
    let declined = declined["auth_req_id"].as_str().unwrap().to_owned();
    let begun = user.begun(&app, "consent", Some(&declined)).await;
    let credential = user.sign(&begun);
    idconsent_e2e::json(
        user.complete(&app, &begun, &credential, "reject").await,
        200,
    )
    .await;
    expect_error(&app, &client, &declined, "access_denied").await;

    let expiring = start(&app, &client, &user.phone, "Let me expire").await;
    let expiring = expiring["auth_req_id"].as_str().unwrap().to_owned();
    app.advance(Duration::from_secs(301));
    expect_error(&app, &client, &expiring, "expired_token").await;
}

async fn bad_backchannel_requests_are_refused(app: TestApp) {
    let client = client(&app, "client_secret_basic").await;
    let long = "x".repeat(65);
    for (fields, expected) in [
        (
            vec![("scope", "phone"), ("login_hint", "+15551234567")],
            "invalid_scope",
        ),
        (vec![("scope", "openid")], "invalid_request"),
        (
            vec![("scope", "openid"), ("login_hint", "0612345678")],
            "invalid_request",
        ),
        (
            vec![
                ("scope", "openid"),
                ("login_hint", "+15551234567"),
                ("id_token_hint", "x"),
            ],
            "invalid_request",
        ),
        (
            vec![
                ("scope", "openid"),
                ("login_hint", "+15551234567"),
                ("binding_message", long.as_str()),
            ],
            "invalid_binding_message",
        ),
    ] {
        let response = form(&app, &client, "/oauth2/bc-authorize", &fields).await;
        assert_eq!(response.status(), 400, "{fields:?}");
        let body: Value = response.json().await.unwrap();
        assert_eq!(body["error"], expected, "{fields:?}");
    }
    let anonymous = with_form(
        app.client.post(app.url("/oauth2/bc-authorize")),
        &[("scope", "openid"), ("login_hint", "+15551234567")],
    )
    .send()
    .await
    .unwrap();
    assert_eq!(anonymous.status(), 401);
    expect_error(
        &app,
        &client,
        "cs_unknown0000000000000000000000",
        "invalid_grant",
    )
    .await;
}
