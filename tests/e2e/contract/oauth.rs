//! OAuth: a request approved with a passkey, its code, the token and what it unlocks, and the
//! hosted page's status.

use idconsent_e2e::TestApp;
use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::receiver::Receiver;
use reqwest::Method;
use serde_json::json;

use super::Contract;
use super::consents::signed;

const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let mut user = AppUser::enrolled(app).await;
    let post = |path: &'static str, body: serde_json::Value| {
        let application = &application;
        async move { signed(app, application, Method::POST, path, Some(&body)).await }
    };

    let created = contract
        .response(
            "POST /v1/oauth/requests",
            "",
            post(
                "/v1/oauth/requests",
                json!({
                    "recipient": user.phone,
                    "redirectUri": "https://shop.example/oauth/callback",
                    "codeChallenge": CHALLENGE,
                    "claims": ["phone_number", "given_name"],
                    "scopes": ["openid", "profile"],
                    "state": "st-42",
                    "description": "Open an account",
                }),
            )
            .await,
        )
        .await;
    let session = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let status = || post("/v1/oauth/requests/status", json!({"sessionId": session}));
    let hosted = format!("/oauth/authorize/{session}/status");
    contract
        .response("POST /v1/oauth/requests/status", "pending", status().await)
        .await;
    contract
        .response(
            "GET /oauth/authorize/{sessionId}/status",
            "pending",
            app.get(&hosted).await,
        )
        .await;

    // The app shows what would be shared; the passkey approves.
    let begun = contract
        .response(
            "POST /v1/auth/fido/authenticate/begin",
            "oauth",
            user.begin(app, "consent", Some(&session)).await,
        )
        .await["data"]
        .clone();
    let credential = user.sign(&begun);
    contract
        .response(
            "POST /v1/auth/fido/authenticate/complete",
            "oauth",
            user.complete(app, &begun, &credential, "approve").await,
        )
        .await;
    let approved = contract.event("oauth", &receiver.event("consent.approved", &session).await);
    let code = approved["data"]["code"].as_str().unwrap().to_owned();
    contract
        .response("POST /v1/oauth/requests/status", "approved", status().await)
        .await;
    contract
        .response(
            "GET /oauth/authorize/{sessionId}/status",
            "approved",
            app.get(&hosted).await,
        )
        .await;

    // The code buys a token, once.
    contract
        .response(
            "POST /v1/oauth/token",
            "",
            post(
                "/v1/oauth/token",
                json!({"code": code, "codeVerifier": VERIFIER}),
            )
            .await,
        )
        .await;
    contract
        .response(
            "POST /v1/oauth/token",
            "spent code",
            post(
                "/v1/oauth/token",
                json!({"code": code, "codeVerifier": VERIFIER}),
            )
            .await,
        )
        .await;
    contract
        .response(
            "POST /v1/oauth/requests/status",
            "exchanged",
            status().await,
        )
        .await;
    contract
        .response(
            "GET /.well-known/jwks.json",
            "",
            app.get("/.well-known/jwks.json").await,
        )
        .await;

    // What the token unlocks, until it is revoked. (The spent code's second use above revoked
    // the token already: a fresh approval gives a live one.)
    let created = json_of(
        post(
            "/v1/oauth/requests",
            json!({
                "recipient": user.phone,
                "redirectUri": "https://shop.example/oauth/callback",
                "codeChallenge": CHALLENGE,
                "claims": ["phone_number"],
                "scopes": ["openid"],
            }),
        )
        .await,
    )
    .await;
    let second = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let begun = user.begun(app, "consent", Some(&second)).await;
    let credential = user.sign(&begun);
    user.complete(app, &begun, &credential, "approve").await;
    let code = receiver.event("consent.approved", &second).await.json()["data"]["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = json_of(
        post(
            "/v1/oauth/token",
            json!({"code": code, "codeVerifier": VERIFIER}),
        )
        .await,
    )
    .await;
    let live = token["access_token"].as_str().unwrap().to_owned();
    contract
        .response(
            "GET /v1/oauth/userinfo",
            "",
            app.client
                .get(app.url("/v1/oauth/userinfo"))
                .bearer_auth(&live)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "POST /v1/oauth/introspect",
            "active",
            post("/v1/oauth/introspect", json!({"token": live})).await,
        )
        .await;
    contract
        .response(
            "POST /v1/oauth/revoke",
            "",
            post("/v1/oauth/revoke", json!({"token": live})).await,
        )
        .await;
    contract
        .response(
            "POST /v1/oauth/introspect",
            "inactive",
            post("/v1/oauth/introspect", json!({"token": live})).await,
        )
        .await;
    contract
        .response(
            "GET /v1/oauth/userinfo",
            "revoked",
            app.client
                .get(app.url("/v1/oauth/userinfo"))
                .bearer_auth(&live)
                .send()
                .await
                .unwrap(),
        )
        .await;
}

async fn json_of(response: reqwest::Response) -> serde_json::Value {
    let status = response.status().as_u16();
    let body: serde_json::Value = response.json().await.unwrap();
    assert!((200..300).contains(&status), "{status}: {body}");
    body
}
