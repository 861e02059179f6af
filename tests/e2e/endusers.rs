//! End users: enrollment, passkeys, app tokens, devices and real approvals (issue 5), with a
//! real software authenticator.

use idconsent_e2e::enduser::{AppUser, ORIGIN};
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use idconsent_passkey_soft::tamper_signature;
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(
    an_enrollment_runs_end_to_end_with_its_events,
    five_wrong_codes_fail_an_enrollment,
    live_consents_need_a_completed_enrollment,
    login_and_refresh_rotate_and_reuse_revokes_the_family,
    approvals_and_rejections_reach_the_merchant,
    a_challenge_cannot_be_used_twice_or_for_another_session,
    forged_assertions_are_refused_and_reported,
    blocked_and_deregistered_devices_cannot_authenticate,
    another_users_device_is_not_found,
);

async fn merchant_app(app: &TestApp, receiver: &Receiver) -> Application {
    let merchant = app.register_merchant().await;
    app.application_calling(&merchant, &receiver.url).await
}

async fn signed_post(
    app: &TestApp,
    application: &Application,
    path: &str,
    body: &Value,
    extra: &[(&str, &str)],
) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    let mut request = app.signed(
        Method::POST,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    );
    for (name, value) in extra {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

/// A sandbox consent for `phone`, its webhooks going to `receiver`.
async fn consent(
    app: &TestApp,
    application: &Application,
    receiver: &Receiver,
    phone: &str,
) -> String {
    let body = json!({
        "clientId": application.client_id,
        "recipient": phone,
        "intent": "TRANSACTION",
        "callbackUrl": receiver.url,
        "transaction": {"type": "payment", "description": "Order 42", "amount": 19.99,
                        "currency": "EUR", "payee": "Example Shop"}
    });
    let created = json(
        signed_post(app, application, "/v1/consents/auth", &body, &[]).await,
        201,
    )
    .await;
    created["data"]["sessionId"].as_str().unwrap().to_owned()
}

/// Waits for an event whose data has `field == value`.
async fn event_where(receiver: &Receiver, event_type: &str, field: &str, value: &str) -> Received {
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == event_type && r.json()["data"][field].as_str() == Some(value)
                })
                .cloned()
        })
        .await
}

/// Waits for an `auth.*` event about a purpose id.
async fn auth_event(receiver: &Receiver, event_type: &str, purpose_id: &str) -> Received {
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == event_type
                        && r.json()["data"]["purpose"]["id"].as_str() == Some(purpose_id)
                })
                .cloned()
        })
        .await
}

async fn an_enrollment_runs_end_to_end_with_its_events(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::new();

    // A merchant starts it with a signed request: its application hears the events.
    let installation = user.installation.clone();
    let started = json(
        signed_post(
            &app,
            &application,
            "/v1/enrollments",
            &json!({"phone": user.phone, "name": "Ada", "deviceName": "Pixel 9", "platform": "android"}),
            &[("x-device-id", installation.as_str())],
        )
        .await,
        201,
    )
    .await;
    assert_eq!(started["data"]["status"], "pending_otp");
    assert!(started["data"]["expiresAt"].as_str().is_some());
    user.enrollment_id = started["data"]["enrollmentId"].as_str().unwrap().to_owned();
    let code = user.code(&app).await;
    assert_eq!(code.len(), 6);

    // Its status: the starting installation and the owning application see it, nobody else.
    let path = format!("/v1/enrollments/{}", user.enrollment_id);
    let mine = json(
        user.request(&app, Method::GET, &path).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(mine["data"]["status"], "pending_otp");
    let stranger = AppUser::new();
    error(
        stranger
            .request(&app, Method::GET, &path)
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    let owner = app
        .signed(
            Method::GET,
            &path,
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(owner, 200).await;

    // A wrong code is refused with the contract's message and changes nothing else.
    let wrong = if code == "000000" { "111111" } else { "000000" };
    let refused = error(
        user.post(
            &app,
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": user.enrollment_id, "otp": wrong}),
        )
        .await,
        400,
        "bad_request",
    )
    .await;
    assert_eq!(refused["message"], "Invalid or expired code");

    let device = user.register(&app).await;
    let registered = event_where(&receiver, "device.registered", "deviceId", &device).await;
    assert!(registered.verifies_with(&application.webhook_secret));
    assert_eq!(
        registered.json()["data"]["enrollmentId"],
        user.enrollment_id.as_str()
    );
    let status = json(
        user.request(&app, Method::GET, &path).send().await.unwrap(),
        200,
    )
    .await;
    assert_eq!(status["data"]["status"], "passkey_registered");
    // Registering again after the passkey exists is a conflict.
    error(
        user.post(
            &app,
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": user.enrollment_id, "otp": code}),
        )
        .await,
        409,
        "conflict",
    )
    .await;

    // Login is not possible before the enrollment is verified.
    error(user.begin(&app, "login", None).await, 404, "not_found").await;

    let verified = json(user.verify(&app).await, 200).await;
    assert_eq!(verified["data"]["status"], "completed");
    let completed = event_where(
        &receiver,
        "enrollment.completed",
        "enrollmentId",
        &user.enrollment_id,
    )
    .await;
    assert!(completed.verifies_with(&application.webhook_secret));
    auth_event(&receiver, "auth.success", &user.enrollment_id).await;
    // Verified once only.
    error(
        user.begin(&app, "enrollment", Some(&user.enrollment_id.clone()))
            .await,
        409,
        "conflict",
    )
    .await;
    app.stop().await;
}

async fn five_wrong_codes_fail_an_enrollment(app: TestApp) {
    let mut user = AppUser::new();
    let enrollment = user.start_enrollment(&app).await;
    let code = user.code(&app).await;
    let wrong = if code == "999999" { "888888" } else { "999999" };
    for _ in 0..5 {
        error(
            user.post(
                &app,
                "/v1/auth/fido/register/begin",
                &json!({"enrollmentId": enrollment, "otp": wrong}),
            )
            .await,
            400,
            "bad_request",
        )
        .await;
    }
    // The right code no longer helps: the enrollment failed.
    error(
        user.post(
            &app,
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": enrollment, "otp": code}),
        )
        .await,
        400,
        "bad_request",
    )
    .await;
    let status = json(
        user.request(&app, Method::GET, &format!("/v1/enrollments/{enrollment}"))
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(status["data"]["status"], "failed");
    // No X-Device-ID, no enrollment; a bad phone is 422.
    let anonymous = app
        .post_json("/v1/enrollments", &json!({"phone": user.phone}))
        .await;
    error(anonymous, 400, "bad_request").await;
    error(
        user.post(&app, "/v1/enrollments", &json!({"phone": "0555 1234"}))
            .await,
        422,
        "validation_error",
    )
    .await;
    // Nobody can make us text one phone without bound: the 6th enrollment in an hour is 429.
    for _ in 0..4 {
        json(
            user.post(&app, "/v1/enrollments", &json!({"phone": user.phone}))
                .await,
            201,
        )
        .await;
    }
    let flooded = user
        .post(&app, "/v1/enrollments", &json!({"phone": user.phone}))
        .await;
    assert!(flooded.headers().contains_key("retry-after"));
    error(flooded, 429, "rate_limited").await;
    app.stop().await;
}

async fn live_consents_need_a_completed_enrollment(app: TestApp) {
    let (_, application, live_key) = app.live_merchant().await;
    let live = |phone: &str| {
        let body = serde_json::to_vec(&json!({
            "clientId": application.client_id,
            "recipient": phone,
            "intent": "LOGIN",
            "callbackUrl": "https://shop.example/hooks",
            "transaction": {"type": "login", "description": "Sign in", "amount": 0,
                            "currency": "USD", "payee": "Shop"}
        }))
        .unwrap();
        app.signed(
            Method::POST,
            "/v1/consents/auth",
            &live_key,
            &application.secret,
            &body,
        )
        .send()
    };
    let mut halfway = AppUser::new();
    halfway.start_enrollment(&app).await;
    halfway.register(&app).await;
    let refused = error(live(&halfway.phone).await.unwrap(), 404, "not_found").await;
    assert_eq!(refused["message"], "Recipient is not enrolled");
    let enrolled = AppUser::enrolled(&app).await;
    json(live(&enrolled.phone).await.unwrap(), 201).await;
    app.stop().await;
}

async fn login_and_refresh_rotate_and_reuse_revokes_the_family(app: TestApp) {
    let mut user = AppUser::enrolled(&app).await;
    let tokens = user.login(&app).await;
    assert_eq!(tokens["tokenType"], "Bearer");
    assert_eq!(tokens["expiresIn"], 900);
    assert_eq!(
        tokens["accessToken"].as_str().unwrap().split('.').count(),
        3
    );
    let devices = json(
        user.authorized(&app, Method::GET, "/v1/devices", &tokens["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(devices["data"]["devices"][0]["id"], user.device_id.as_str());
    assert_eq!(devices["data"]["devices"][0]["status"], "active");
    assert!(devices["data"]["devices"][0]["lastUsedAt"].is_string());

    // The access token is bound to its X-Device-ID.
    let elsewhere = app
        .client
        .get(app.url("/v1/devices"))
        .bearer_auth(tokens["accessToken"].as_str().unwrap())
        .header("x-device-id", "another-installation")
        .send()
        .await
        .unwrap();
    error(elsewhere, 401, "unauthorized").await;

    // Header rules of /v6/auth: JSON only (415), X-Device-ID required (400).
    let refresh_body = json!({"refreshToken": tokens["refreshToken"]});
    let as_text = user
        .request(&app, Method::POST, "/v6/auth/refresh")
        .header("content-type", "text/plain")
        .body(refresh_body.to_string())
        .send()
        .await
        .unwrap();
    error(as_text, 415, "unsupported_media_type").await;
    let no_device = app.post_json("/v6/auth/refresh", &refresh_body).await;
    error(no_device, 400, "bad_request").await;

    // Rotation: the new pair works, the old refresh token is spent.
    let second = json(
        user.post(&app, "/v6/auth/refresh", &refresh_body).await,
        200,
    )
    .await;
    let second = &second["data"];
    assert_ne!(second["refreshToken"], tokens["refreshToken"]);
    json(
        user.authorized(&app, Method::GET, "/v1/devices", &second["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    // Reuse of the spent token: 401, and the whole family is revoked, the live one too.
    error(
        user.post(&app, "/v6/auth/refresh", &refresh_body).await,
        401,
        "unauthorized",
    )
    .await;
    error(
        user.post(
            &app,
            "/v6/auth/refresh",
            &json!({"refreshToken": second["refreshToken"]}),
        )
        .await,
        401,
        "unauthorized",
    )
    .await;
    // The revoked family's access tokens stop at once, not at expiry (issue 12 §5).
    for access_token in [&tokens["accessToken"], &second["accessToken"]] {
        let stopped = user
            .authorized(&app, Method::GET, "/v1/devices", access_token)
            .send()
            .await
            .unwrap();
        error(stopped, 401, "unauthorized").await;
    }
    // A new sign-in starts a new family.
    let again = user.login(&app).await;
    json(
        user.authorized(&app, Method::GET, "/v1/devices", &again["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    json(
        user.post(
            &app,
            "/v6/auth/refresh",
            &json!({"refreshToken": again["refreshToken"]}),
        )
        .await,
        200,
    )
    .await;
    app.stop().await;
}

async fn approvals_and_rejections_reach_the_merchant(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;

    let session = consent(&app, &application, &receiver, &user.phone).await;
    let begun = user.begun(&app, "consent", Some(&session)).await;
    // What the app shows, and the challenge commits to it.
    let context = &begun["context"];
    assert_eq!(context["sessionId"], session.as_str());
    assert_eq!(context["intent"], "TRANSACTION");
    assert_eq!(context["transaction"]["amount"], 19.99);
    assert_eq!(context["transaction"]["payee"], "Example Shop");
    assert_eq!(context["application"], "Checkout");
    assert!(context["merchant"].as_str().is_some());
    let nonce: [u8; 32] = hex_bytes(begun["nonce"].as_str().unwrap());
    let hash = idconsent_enduser_commitment(context);
    assert_eq!(hex(&hash), begun["contextHash"].as_str().unwrap());
    let expected = idconsent_enduser::commitment::derive_challenge(&nonce, &hash);
    assert_eq!(
        begun["publicKey"]["challenge"].as_str().unwrap(),
        base64url(&expected)
    );

    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["verified"], true);
    assert_eq!(done["data"]["status"], "approved");
    assert_eq!(done["data"]["purpose"]["type"], "consent");
    let approved = receiver.event("consent.approved", &session).await;
    assert!(approved.verifies_with(&application.webhook_secret));
    let success = auth_event(&receiver, "auth.success", &session).await;
    assert_eq!(success.json()["data"]["deviceId"], user.device_id.as_str());
    let read = json(
        app.signed(
            Method::GET,
            &format!("/v1/consents/auth/{session}"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["data"]["status"], "approved");
    // Decided: nothing more to approve.
    error(
        user.begin(&app, "consent", Some(&session)).await,
        409,
        "conflict",
    )
    .await;

    let second = consent(&app, &application, &receiver, &user.phone).await;
    let begun = user.begun(&app, "consent", Some(&second)).await;
    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "reject").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "rejected");
    receiver.event("consent.rejected", &second).await;
    // An invalid decision is 422 and changes nothing.
    let third = consent(&app, &application, &receiver, &user.phone).await;
    let begun = user.begun(&app, "consent", Some(&third)).await;
    let credential = user.sign(&begun);
    error(
        user.complete(&app, &begun, &credential, "maybe").await,
        422,
        "validation_error",
    )
    .await;
    // Someone else's session is invisible to this user.
    let mut other = AppUser::enrolled(&app).await;
    error(
        other.begin(&app, "consent", Some(&third)).await,
        404,
        "not_found",
    )
    .await;
    // The recipient's app reads the session with its access token; nobody else's app can.
    let path = format!("/v1/consents/auth/{third}");
    let tokens = user.login(&app).await;
    let mine = json(
        user.authorized(&app, Method::GET, &path, &tokens["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(mine["data"]["status"], "pending");
    let theirs = other.login(&app).await;
    error(
        other
            .authorized(&app, Method::GET, &path, &theirs["accessToken"])
            .send()
            .await
            .unwrap(),
        404,
        "not_found",
    )
    .await;
    app.stop().await;
}

async fn a_challenge_cannot_be_used_twice_or_for_another_session(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;
    let first = consent(&app, &application, &receiver, &user.phone).await;
    let second = consent(&app, &application, &receiver, &user.phone).await;

    let for_first = user.begun(&app, "consent", Some(&first)).await;
    let for_second = user.begun(&app, "consent", Some(&second)).await;
    // An assertion over the first challenge presented for the second: refused.
    let signed_first = user.sign(&for_first);
    error(
        user.complete(&app, &for_second, &signed_first, "approve")
            .await,
        401,
        "unauthorized",
    )
    .await;
    auth_event(&receiver, "auth.failed", &second).await;

    json(
        user.complete(&app, &for_first, &signed_first, "approve")
            .await,
        200,
    )
    .await;
    // The same challenge again, even with a fresh assertion: refused.
    let again = user.sign(&for_first);
    let refused = error(
        user.complete(&app, &for_first, &again, "approve").await,
        401,
        "unauthorized",
    )
    .await;
    assert!(refused["message"].as_str().unwrap().contains("challenge"));
    let reads = receiver.received();
    assert!(
        reads
            .iter()
            .filter(|r| r.event_type() == "consent.approved")
            .count()
            <= 1
    );
    app.stop().await;
}

async fn forged_assertions_are_refused_and_reported(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;

    type Forge = fn(&mut AppUser, &Value) -> Value;
    let forgeries: [(&str, Forge); 3] = [
        ("tampered signature", |user, begun| {
            let mut credential = user.sign(begun);
            tamper_signature(&mut credential).unwrap();
            credential
        }),
        // Same RP ID, an origin the server does not list (a browser would allow it).
        ("wrong origin", |user, begun| {
            user.passkey
                .authenticate(
                    "http://localhost:9999",
                    &json!({"publicKey": begun["publicKey"]}),
                )
                .unwrap()
        }),
        ("missing user verification", |user, begun| {
            user.passkey
                .authenticate_without_uv(ORIGIN, &json!({"publicKey": begun["publicKey"]}))
                .unwrap()
        }),
    ];
    for (what, forge) in forgeries {
        let session = consent(&app, &application, &receiver, &user.phone).await;
        let begun = user.begun(&app, "consent", Some(&session)).await;
        let credential = forge(&mut user, &begun);
        refused_and_reported(
            &app,
            &application,
            &receiver,
            &user,
            &session,
            &begun,
            &credential,
            what,
        )
        .await;
    }

    // A counter going backwards: a copy of the authenticator taken before a genuine use
    // replays a counter value the server has already seen.
    let mut copy = user.passkey.snapshot().unwrap();
    let begun = user.begun(&app, "login", None).await;
    let credential = user.sign(&begun);
    json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    let session = consent(&app, &application, &receiver, &user.phone).await;
    let begun = user.begun(&app, "consent", Some(&session)).await;
    let credential = copy
        .authenticate(ORIGIN, &json!({"publicKey": begun["publicKey"]}))
        .unwrap();
    refused_and_reported(
        &app,
        &application,
        &receiver,
        &user,
        &session,
        &begun,
        &credential,
        "counter going backwards",
    )
    .await;
    // The genuine authenticator still works.
    let retry = user.begun(&app, "consent", Some(&session)).await;
    let credential = user.sign(&retry);
    json(
        user.complete(&app, &retry, &credential, "approve").await,
        200,
    )
    .await;
    app.stop().await;
}

#[allow(clippy::too_many_arguments)]
async fn refused_and_reported(
    app: &TestApp,
    application: &Application,
    receiver: &Receiver,
    user: &AppUser,
    session: &str,
    begun: &Value,
    credential: &Value,
    what: &str,
) {
    let refused = user.complete(app, begun, credential, "approve").await;
    assert_eq!(refused.status(), 401, "{what}");
    error(refused, 401, "unauthorized").await;
    let failed = auth_event(receiver, "auth.failed", session).await;
    assert!(failed.verifies_with(&application.webhook_secret), "{what}");
    // The session is untouched.
    let read = json(
        app.signed(
            Method::GET,
            &format!("/v1/consents/auth/{session}"),
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(read["data"]["status"], "pending", "{what}");
}

async fn blocked_and_deregistered_devices_cannot_authenticate(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;

    // Blocked between begin and complete: the assertion is refused, tokens die.
    let mut user = AppUser::enrolled(&app).await;
    let tokens = user.login(&app).await;
    let session = consent(&app, &application, &receiver, &user.phone).await;
    let begun = user.begun(&app, "consent", Some(&session)).await;
    let blocked = json(
        user.authorized(
            &app,
            Method::POST,
            &format!("/v1/devices/{}/block", user.device_id),
            &tokens["accessToken"],
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(blocked["data"]["status"], "blocked");
    let credential = user.sign(&begun);
    error(
        user.complete(&app, &begun, &credential, "approve").await,
        401,
        "unauthorized",
    )
    .await;
    auth_event(&receiver, "auth.failed", &session).await;
    error(
        user.authorized(&app, Method::GET, "/v1/devices", &tokens["accessToken"])
            .send()
            .await
            .unwrap(),
        401,
        "unauthorized",
    )
    .await;
    error(
        user.post(
            &app,
            "/v6/auth/refresh",
            &json!({"refreshToken": tokens["refreshToken"]}),
        )
        .await,
        401,
        "unauthorized",
    )
    .await;
    // With no active device left there is nothing to sign with.
    error(user.begin(&app, "login", None).await, 404, "not_found").await;

    // Deregistered between begin and complete, by a merchant-created enrollment's user.
    let mut other = AppUser::new();
    let installation = other.installation.clone();
    let started = json(
        signed_post(
            &app,
            &application,
            "/v1/enrollments",
            &json!({"phone": other.phone}),
            &[("x-device-id", installation.as_str())],
        )
        .await,
        201,
    )
    .await;
    other.enrollment_id = started["data"]["enrollmentId"].as_str().unwrap().to_owned();
    other.register(&app).await;
    json(other.verify(&app).await, 200).await;
    let tokens = other.login(&app).await;
    let session = consent(&app, &application, &receiver, &other.phone).await;
    let begun = other.begun(&app, "consent", Some(&session)).await;
    let deleted = json(
        other
            .authorized(
                &app,
                Method::DELETE,
                &format!("/v1/devices/{}", other.device_id),
                &tokens["accessToken"],
            )
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(deleted["data"]["status"], "deregistered");
    event_where(
        &receiver,
        "device.deregistered",
        "deviceId",
        &other.device_id,
    )
    .await;
    let credential = other.sign(&begun);
    error(
        other.complete(&app, &begun, &credential, "approve").await,
        401,
        "unauthorized",
    )
    .await;
    auth_event(&receiver, "auth.failed", &session).await;
    app.stop().await;
}

async fn another_users_device_is_not_found(app: TestApp) {
    let mut alice = AppUser::enrolled(&app).await;
    let mut bob = AppUser::enrolled(&app).await;
    let alice_tokens = alice.login(&app).await;
    let bob_tokens = bob.login(&app).await;
    let path = format!("/v1/devices/{}", alice.device_id);
    json(
        alice
            .authorized(&app, Method::GET, &path, &alice_tokens["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    for method in [Method::GET, Method::DELETE] {
        error(
            bob.authorized(&app, method, &path, &bob_tokens["accessToken"])
                .send()
                .await
                .unwrap(),
            404,
            "not_found",
        )
        .await;
    }
    error(
        bob.authorized(
            &app,
            Method::POST,
            &format!("{path}/block"),
            &bob_tokens["accessToken"],
        )
        .send()
        .await
        .unwrap(),
        404,
        "not_found",
    )
    .await;
    // Still active for Alice.
    let devices = json(
        alice
            .authorized(
                &app,
                Method::GET,
                "/v1/devices",
                &alice_tokens["accessToken"],
            )
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(devices["data"]["devices"][0]["status"], "active");
    // No token at all: 401.
    error(
        alice
            .request(&app, Method::GET, "/v1/devices")
            .send()
            .await
            .unwrap(),
        401,
        "unauthorized",
    )
    .await;
    app.stop().await;
}

fn idconsent_enduser_commitment(context: &Value) -> [u8; 32] {
    idconsent_enduser::commitment::context_hash(context)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hex_bytes(text: &str) -> [u8; 32] {
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).unwrap();
    }
    out
}

fn base64url(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}
