//! OAuth with PKCE (issue 6): requests, approval, the single-use code, tokens and their
//! introspection and revocation — on both backends.

use std::time::Duration;

use futures_util::future::join_all;
use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(
    a_passkey_approval_yields_a_code_a_token_and_claims,
    plain_pkce_works_and_a_wrong_verifier_burns_the_code,
    a_second_use_fails_and_revokes_the_first_token,
    another_applications_code_is_refused_without_consuming_it,
    a_forged_secret_is_refused_without_consuming_the_code,
    bad_requests_are_refused,
    twenty_concurrent_exchanges_yield_one_token,
    a_rejection_is_reported_without_a_code,
    signing_keys_are_shared_by_processes_and_rotate_without_a_restart,
    the_sandbox_helper_shares_only_documented_test_identities,
);

const REDIRECT: &str = "https://shop.example/oauth/callback";
const VERIFIER: &str = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
const CHALLENGE: &str = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";

async fn post(app: &TestApp, application: &Application, path: &str, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(
        Method::POST,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

/// An OAuth request for `phone`; returns the session id.
async fn request(
    app: &TestApp,
    application: &Application,
    phone: &str,
    extra: Value,
) -> (String, Value) {
    let mut body = json!({
        "recipient": phone,
        "redirectUri": REDIRECT,
        "codeChallenge": CHALLENGE,
        "claims": ["phone_number", "given_name"],
        "scopes": ["openid", "profile"],
        "state": "st-42",
        "description": "Open an account",
    });
    if let (Value::Object(fields), Value::Object(more)) = (&mut body, extra) {
        fields.extend(more);
    }
    let created = json(
        post(app, application, "/v1/oauth/requests", &body).await,
        201,
    )
    .await;
    (
        created["data"]["sessionId"].as_str().unwrap().to_owned(),
        created["data"].clone(),
    )
}

async fn sandbox_approve(app: &TestApp, application: &Application, session: &str) {
    json(
        post(
            app,
            application,
            &format!("/v1/sandbox/consents/{session}/approve"),
            &json!({}),
        )
        .await,
        200,
    )
    .await;
}

async fn status(app: &TestApp, application: &Application, session: &str) -> Value {
    json(
        post(
            app,
            application,
            "/v1/oauth/requests/status",
            &json!({"sessionId": session}),
        )
        .await,
        200,
    )
    .await["data"]
        .clone()
}

async fn exchange(
    app: &TestApp,
    application: &Application,
    code: &str,
    verifier: &str,
) -> Response {
    post(
        app,
        application,
        "/v1/oauth/token",
        &json!({"code": code, "codeVerifier": verifier}),
    )
    .await
}

async fn invalid_grant(response: Response) {
    let body = error(response, 400, "bad_request").await;
    assert_eq!(body["message"], "Invalid or expired authorization code");
}

async fn introspect(app: &TestApp, application: &Application, token: &str) -> Value {
    let response = post(
        app,
        application,
        "/v1/oauth/introspect",
        &json!({"token": token}),
    )
    .await;
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

/// A merchant application whose webhooks go to `receiver`.
async fn setup(app: &TestApp, receiver: &Receiver) -> Application {
    let merchant = app.register_merchant().await;
    app.application_calling(&merchant, &receiver.url).await
}

async fn a_passkey_approval_yields_a_code_a_token_and_claims(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;
    let (session, created) = request(&app, &application, &user.phone, json!({})).await;
    assert_eq!(created["status"], "pending");
    assert_eq!(created["type"], "OAUTH");
    assert_eq!(created["redirectUri"], REDIRECT);
    assert_eq!(created["state"], "st-42");
    assert!(!created["qr"].as_str().unwrap().is_empty());
    assert_eq!(
        status(&app, &application, &session).await["status"],
        "PENDING"
    );

    // The app shows what would be shared, then the passkey approves.
    let begun = user.begun(&app, "consent", Some(&session)).await;
    assert_eq!(begun["context"]["intent"], "OAUTH");
    assert_eq!(
        begun["context"]["claims"],
        json!(["phone_number", "given_name"])
    );
    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "approved");

    // The code reaches the merchant by webhook, with the claims.
    let approved = receiver.event("consent.approved", &session).await;
    assert!(approved.verifies_with(&application.webhook_secret));
    let data = approved.json()["data"].clone();
    let code = data["code"].as_str().unwrap().to_owned();
    assert_eq!(data["claims"]["phone_number"]["value"], user.phone.as_str());
    assert_eq!(data["state"], "st-42");

    let approved_status = status(&app, &application, &session).await;
    assert_eq!(approved_status["status"], "APPROVED");
    assert_eq!(approved_status["code"], code.as_str());
    assert_eq!(approved_status["recipient"], user.phone.as_str());
    assert!(approved_status["approvedAt"].is_string());
    let phone_claim = &approved_status["claims"]["phone_number"];
    assert_eq!(phone_claim["verified"], true);
    assert_eq!(phone_claim["verificationStatus"], "verified");
    assert_eq!(phone_claim["verificationSource"], "sms_otp");
    let missing = &approved_status["claims"]["given_name"];
    assert_eq!(missing["value"], Value::Null);
    assert_eq!(missing["verified"], false);
    assert_eq!(missing["verificationStatus"], "unavailable");

    let token = exchange(&app, &application, &code, VERIFIER).await;
    assert_eq!(token.headers()["cache-control"], "no-store");
    let token: Value = json(token, 200).await;
    assert_eq!(token["token_type"], "Bearer");
    assert_eq!(token["expires_in"], 3600);
    assert_eq!(token["subject"], user.phone.as_str());
    assert_eq!(token["scopes"], json!(["openid", "profile"]));
    assert_eq!(token["state"], "st-42");
    assert_eq!(token["claims"]["phone_number"]["verified"], true);
    let access = token["access_token"].as_str().unwrap().to_owned();
    // The code is no longer shown once exchanged.
    assert!(
        status(&app, &application, &session)
            .await
            .get("code")
            .is_none()
    );

    // The token's header names a key of the JWKS.
    let jwks = json_raw(app.get("/.well-known/jwks.json").await).await;
    let header: Value =
        serde_json::from_slice(&base64url(access.split('.').next().unwrap())).unwrap();
    assert_eq!(header["alg"], "ES256");
    assert!(
        jwks["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|key| key["kid"] == header["kid"])
    );

    let info = app
        .client
        .get(app.url("/v1/oauth/userinfo"))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    let info = json(info, 200).await;
    assert_eq!(info["data"]["sub"], user.phone.as_str());
    assert_eq!(info["data"]["claims"]["phone_number"]["verified"], true);

    let active = introspect(&app, &application, &access).await;
    assert_eq!(active["active"], true);
    assert_eq!(active["sub"], user.phone.as_str());
    assert_eq!(active["scope"], "openid profile");
    json(
        post(
            &app,
            &application,
            "/v1/oauth/revoke",
            &json!({"token": access}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(
        introspect(&app, &application, &access).await["active"],
        false
    );
    let revoked = app
        .client
        .get(app.url("/v1/oauth/userinfo"))
        .bearer_auth(&access)
        .send()
        .await
        .unwrap();
    error(revoked, 401, "unauthorized").await;
    app.stop().await;
}

async fn plain_pkce_works_and_a_wrong_verifier_burns_the_code(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let plain = "plain-verifier-0123456789-0123456789-abcdefghij";
    let (session, _) = request(
        &app,
        &application,
        "+15550001111",
        json!({"codeChallenge": plain, "codeChallengeMethod": "plain"}),
    )
    .await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    json(exchange(&app, &application, &code, plain).await, 200).await;

    // S256 with a wrong verifier: refused, and the code is spent by the attempt.
    let (session, _) = request(&app, &application, "+15550001112", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    invalid_grant(exchange(&app, &application, &code, &format!("{VERIFIER}x")).await).await;
    invalid_grant(exchange(&app, &application, &code, VERIFIER).await).await;
    app.stop().await;
}

async fn a_second_use_fails_and_revokes_the_first_token(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let (session, _) = request(&app, &application, "+15550002222", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = json(exchange(&app, &application, &code, VERIFIER).await, 200).await;
    let access = token["access_token"].as_str().unwrap();
    assert_eq!(introspect(&app, &application, access).await["active"], true);
    invalid_grant(exchange(&app, &application, &code, VERIFIER).await).await;
    assert_eq!(
        introspect(&app, &application, access).await["active"],
        false
    );
    // Unknown codes get the same answer.
    invalid_grant(exchange(&app, &application, "ac_nope", VERIFIER).await).await;
    app.stop().await;
}

async fn another_applications_code_is_refused_without_consuming_it(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let other = setup(&app, &receiver).await;
    let (session, _) = request(&app, &application, "+15550003333", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    invalid_grant(exchange(&app, &other, &code, VERIFIER).await).await;
    // Another application cannot read the request either.
    error(
        post(
            &app,
            &other,
            "/v1/oauth/requests/status",
            &json!({"sessionId": session}),
        )
        .await,
        404,
        "not_found",
    )
    .await;
    let token = json(exchange(&app, &application, &code, VERIFIER).await, 200).await;
    // Introspection by another application says nothing.
    let access = token["access_token"].as_str().unwrap();
    assert_eq!(introspect(&app, &other, access).await["active"], false);
    app.stop().await;
}

/// A code is `ac_<id>_<secret>`: knowing the id (which says nothing secret) and guessing at the
/// secret gets the same 400 as any bad code, and must not spend the real one.
async fn a_forged_secret_is_refused_without_consuming_the_code(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let (session, _) = request(&app, &application, "+15550004444", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let (id, secret) = code
        .strip_prefix("ac_")
        .and_then(|body| body.split_once('_'))
        .expect("ac_<id>_<secret>");
    let forged = format!("ac_{id}_{}", "0".repeat(secret.len()));
    invalid_grant(exchange(&app, &application, &forged, VERIFIER).await).await;
    assert_eq!(
        status(&app, &application, &session).await["code"],
        code.as_str(),
        "the real code is still unspent"
    );
    let token = json(exchange(&app, &application, &code, VERIFIER).await, 200).await;
    assert_eq!(token["token_type"], "Bearer");
    app.stop().await;
}

async fn bad_requests_are_refused(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let base = json!({
        "recipient": "+15550004444",
        "redirectUri": REDIRECT,
        "codeChallenge": CHALLENGE,
    });
    let with = |field: &str, value: Value| {
        let mut body = base.clone();
        body[field] = value;
        body
    };
    for (body, field) in [
        (
            with("redirectUri", json!("https://evil.example/cb")),
            "redirectUri",
        ),
        (
            with("claims", json!(["phone_number", "shoe_size"])),
            "claims[1]",
        ),
        (
            with("codeChallengeMethod", json!("S512")),
            "codeChallengeMethod",
        ),
        (with("codeChallenge", json!("short")), "codeChallenge"),
        (with("recipient", json!("555-1234")), "recipient"),
        // Text-direction and zero-width characters could make the prompt lie (issue 12 §5).
        (
            with(
                "description",
                json!("Open an account \u{202E}tnuocca eht esolc"),
            ),
            "description",
        ),
        (
            with("description", json!("Open an\u{200B}account")),
            "description",
        ),
    ] {
        let refused = error(
            post(&app, &application, "/v1/oauth/requests", &body).await,
            422,
            "validation_error",
        )
        .await;
        assert!(
            refused["details"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["field"] == field),
            "{refused}"
        );
    }
    error(
        post(
            &app,
            &application,
            "/v1/oauth/requests",
            &json!({"recipient": 5}),
        )
        .await,
        400,
        "bad_request",
    )
    .await;
    // An expired code: codes live ten minutes.
    let (session, _) = request(&app, &application, "+15550004445", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    app.advance(Duration::from_secs(601));
    invalid_grant(exchange(&app, &application, &code, VERIFIER).await).await;
    app.stop().await;
}

async fn twenty_concurrent_exchanges_yield_one_token(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let (session, _) = request(&app, &application, "+15550005555", json!({})).await;
    sandbox_approve(&app, &application, &session).await;
    let code = status(&app, &application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    // Twenty distinct signed requests (one timestamp each, so none is a replay).
    let body = serde_json::to_vec(&json!({"code": code, "codeVerifier": VERIFIER})).unwrap();
    let now = idconsent_e2e::scenario::now_millis();
    let attempts = (0..20).map(|i| {
        app.signed_at(
            Method::POST,
            "/v1/oauth/token",
            &application.sandbox_key,
            &application.secret,
            &body,
            now - i,
        )
        .send()
    });
    let statuses: Vec<u16> = join_all(attempts)
        .await
        .into_iter()
        .map(|r| r.unwrap().status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 400).count(),
        19,
        "{statuses:?}"
    );
    app.stop().await;
}

async fn a_rejection_is_reported_without_a_code(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let (session, _) = request(&app, &application, "+15550006666", json!({})).await;
    json(
        post(
            &app,
            &application,
            &format!("/v1/sandbox/consents/{session}/reject"),
            &json!({}),
        )
        .await,
        200,
    )
    .await;
    let rejected = receiver.event("consent.rejected", &session).await;
    assert!(rejected.json()["data"].get("code").is_none());
    let now = status(&app, &application, &session).await;
    assert_eq!(now["status"], "REJECTED");
    assert!(now.get("code").is_none());
    app.stop().await;
}

async fn json_raw(response: Response) -> Value {
    assert_eq!(response.status(), 200);
    response.json().await.unwrap()
}

fn base64url(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .unwrap()
}

/// A token exchanged at `base` (another process on the same database) for a fresh approved
/// request; returns the access token.
async fn token_from(app: &TestApp, base: &str, application: &Application, phone: &str) -> String {
    let (session, _) = request(app, application, phone, json!({})).await;
    sandbox_approve(app, application, &session).await;
    let code = status(app, application, &session).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = serde_json::to_vec(&json!({"code": code, "codeVerifier": VERIFIER})).unwrap();
    let timestamp = app.signing_millis().to_string();
    let signature = idconsent_auth_hmac::sign_request(
        application.secret.as_bytes(),
        &application.sandbox_key,
        &timestamp,
        &body,
    );
    let exchanged = app
        .client
        .post(format!("{base}/v1/oauth/token"))
        .header("x-api-key", &application.sandbox_key)
        .header("x-timestamp", timestamp)
        .header("x-signature", signature)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    json(exchanged, 200).await["access_token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn kid_of(token: &str) -> String {
    let header: Value =
        serde_json::from_slice(&base64url(token.split('.').next().unwrap())).unwrap();
    header["kid"].as_str().unwrap().to_owned()
}

async fn kids_at(app: &TestApp, base: &str) -> Vec<String> {
    let jwks = json_raw(
        app.client
            .get(format!("{base}/.well-known/jwks.json"))
            .send()
            .await
            .unwrap(),
    )
    .await;
    jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|key| key["kid"].as_str().unwrap().to_owned())
        .collect()
}

async fn userinfo_status(app: &TestApp, base: &str, token: &str) -> u16 {
    app.client
        .get(format!("{base}/v1/oauth/userinfo"))
        .bearer_auth(token)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

/// CONTRACT §9: production needs no key files; two processes on one database sign and verify
/// with the same keys, and a rotation reaches every process without a restart — published
/// everywhere before any process signs with it.
async fn signing_keys_are_shared_by_processes_and_rotate_without_a_restart(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let other = app.second_server().await;
    let (here, there) = (app.base.clone(), other.url());
    let first_kids = kids_at(&app, &here).await;
    assert_eq!(first_kids.len(), 1);
    assert_eq!(kids_at(&app, &there).await, first_kids);

    // A token signed by one process verifies at the other.
    let token = token_from(&app, &there, &application, "+15550007001").await;
    assert_eq!(kid_of(&token), first_kids[0]);
    assert_eq!(userinfo_status(&app, &here, &token).await, 200);

    // Rotate on this process; the other publishes the new key within its reload interval.
    let rotated = json(
        app.as_operator(Method::POST, "/v1/admin/oauth-keys/rotate")
            .send()
            .await
            .unwrap(),
        201,
    )
    .await;
    let new_kid = rotated["data"]["kid"].as_str().unwrap().to_owned();
    crate::foundation::eventually(|| {
        let (app, there, new_kid) = (&app, &there, &new_kid);
        async move { kids_at(app, there).await.contains(new_kid).then_some(()) }
    })
    .await;

    // Once the activation delay has passed, the other process signs with the new key, and this
    // one verifies it; the old token still verifies everywhere.
    app.advance(Duration::from_secs(5));
    let mut attempt = 0;
    let fresh = crate::foundation::eventually(|| {
        attempt += 1;
        let (app, there, application, new_kid) = (&app, &there, &application, &new_kid);
        let phone = format!("+155500071{attempt:02}");
        async move {
            let token = token_from(app, there, application, &phone).await;
            (kid_of(&token) == *new_kid).then_some(token)
        }
    })
    .await;
    assert_eq!(userinfo_status(&app, &here, &fresh).await, 200);
    assert_eq!(userinfo_status(&app, &there, &token).await, 200);
    other.stop().await;
    app.stop().await;
}

/// Issue 12 §2: when the merchant decides through the sandbox helper, no real person's data
/// leaves — an enrolled phone reads exactly like an unknown one, and the documented test
/// identities carry their fixed claims.
async fn the_sandbox_helper_shares_only_documented_test_identities(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = setup(&app, &receiver).await;
    let enrolled = AppUser::enrolled(&app).await;
    let claims_after_sandbox_approval = |phone: String| {
        let (app, application) = (&app, &application);
        async move {
            let (session, _) = request(app, application, &phone, json!({})).await;
            sandbox_approve(app, application, &session).await;
            status(app, application, &session).await["claims"].clone()
        }
    };
    let unavailable = json!({
        "value": null,
        "verified": false,
        "verificationStatus": "unavailable",
    });
    let for_enrolled = claims_after_sandbox_approval(enrolled.phone.clone()).await;
    let for_unknown = claims_after_sandbox_approval("+14155550142".to_owned()).await;
    assert_eq!(for_enrolled, for_unknown, "enrollment must not show");
    for claims in [&for_enrolled, &for_unknown] {
        for key in ["phone_number", "given_name"] {
            let claim = &claims[key];
            for (field, expected) in unavailable.as_object().unwrap() {
                assert_eq!(&claim[field], expected, "{key}.{field}: {claims}");
            }
        }
    }

    let jane = claims_after_sandbox_approval("+15555550100".to_owned()).await;
    assert_eq!(jane["phone_number"]["value"], "+15555550100");
    assert_eq!(jane["given_name"]["value"], "Jane");
    for key in ["phone_number", "given_name"] {
        assert_eq!(jane[key]["verified"], true);
        assert_eq!(jane[key]["verificationSource"], "sandbox");
        assert_eq!(jane[key]["verifiedAt"], "2026-01-01T00:00:00.000Z");
    }
    let phone_only = claims_after_sandbox_approval("+15555550101".to_owned()).await;
    assert_eq!(phone_only["phone_number"]["verified"], true);
    assert_eq!(
        phone_only["given_name"]["verificationStatus"],
        "unavailable"
    );
}
