//! OpenID Connect: the client configuration, discovery, and the `/oauth2/*` JSON answers.

use idconsent_e2e::TestApp;
use idconsent_e2e::enduser::AppUser;
use reqwest::Method;
use serde_json::json;

use super::Contract;
use crate::oidc::{REDIRECT, VERIFIER, authorize_url, no_redirects, param, with_form};

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let path = format!("/v1/merchants/applications/{}/oidc", application.id);
    let body =
        json!({"redirectUris": [REDIRECT], "tokenEndpointAuthMethod": "client_secret_basic"});
    contract
        .response(
            "PUT /v1/merchants/applications/{id}/oidc",
            "",
            app.as_merchant(Method::PUT, &path, &merchant.token)
                .json(&body)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/merchants/applications/{id}/oidc",
            "",
            app.as_merchant(Method::GET, &path, &merchant.token)
                .send()
                .await
                .unwrap(),
        )
        .await;
    let rotated = contract
        .response(
            "POST /v1/merchants/applications/{id}/oidc/rotate-secret",
            "",
            app.as_merchant(
                Method::POST,
                &format!("{path}/rotate-secret"),
                &merchant.token,
            )
            .send()
            .await
            .unwrap(),
        )
        .await;
    let secret = rotated["data"]["clientSecret"].as_str().unwrap().to_owned();
    let client_id = application.id.clone();
    contract
        .response(
            "GET /.well-known/openid-configuration",
            "",
            app.get("/.well-known/openid-configuration").await,
        )
        .await;

    // The flow to a code: the browser's hops by hand (the issuer here is not the real address).
    let mut user = AppUser::enrolled(app).await;
    let url = authorize_url(app, &client_id, &[("login_hint", user.phone.as_str())]);
    let started = no_redirects().get(&url).send().await.unwrap();
    let hosted = started.headers()["location"].to_str().unwrap().to_owned();
    let session = hosted.rsplit('/').next().unwrap().to_owned();
    let begun = user.begun(app, "consent", Some(&session)).await;
    let credential = user.sign(&begun);
    user.complete(app, &begun, &credential, "approve").await;
    let landed = no_redirects()
        .get(app.url(&format!("/oauth/authorize/{session}")))
        .send()
        .await
        .unwrap();
    let landed = landed.headers()["location"].to_str().unwrap().to_owned();
    let code = param(&landed, "code").unwrap();

    let post = |route: &'static str, fields: Vec<(&'static str, String)>| {
        with_form(
            app.client
                .post(app.url(route))
                .basic_auth(&client_id, Some(&secret)),
            &fields,
        )
        .send()
    };
    let tokens = contract
        .response(
            "POST /oauth2/token",
            "",
            post(
                "/oauth2/token",
                vec![
                    ("grant_type", "authorization_code".into()),
                    ("code", code),
                    ("redirect_uri", REDIRECT.into()),
                    ("code_verifier", VERIFIER.into()),
                ],
            )
            .await
            .unwrap(),
        )
        .await;
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    contract
        .response(
            "GET /oauth2/userinfo",
            "",
            app.client
                .get(app.url("/oauth2/userinfo"))
                .bearer_auth(&access)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /oauth2/userinfo",
            "",
            app.client
                .post(app.url("/oauth2/userinfo"))
                .bearer_auth(&access)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /oauth2/introspect",
            "",
            post("/oauth2/introspect", vec![("token", access.clone())])
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /oauth2/bc-authorize",
            "",
            post(
                "/oauth2/bc-authorize",
                vec![
                    ("scope", "openid phone".into()),
                    ("login_hint", user.phone.clone()),
                    ("binding_message", "Order 42".into()),
                ],
            )
            .await
            .unwrap(),
        )
        .await;
}
