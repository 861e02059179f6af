//! A new passkey must not take over an identity (issue 12, ADR 0013): a device added to an
//! enrolled phone stays pending until one of the phone's devices approves it, or until a
//! recovery's cooling-off period ends without a rejection. Real software passkeys, real HTTP.

use std::time::Duration;

use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    a_second_device_waits_for_the_first_and_can_then_approve,
    a_rejected_device_never_authenticates,
    a_recovery_activates_the_device_after_the_cooling_off_period,
    a_recovery_is_cancelled_from_an_existing_device,
);

/// An enrolled user whose first device a merchant's application enrolled (so it hears about
/// the phone's devices), and a second installation of the same phone.
async fn enrolled_with_merchant(app: &TestApp, receiver: &Receiver) -> (Application, AppUser) {
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    let mut user = AppUser::new();
    let body =
        serde_json::to_vec(&json!({"phone": user.phone, "deviceName": "First phone"})).unwrap();
    let started = json(
        app.signed(
            Method::POST,
            "/v1/enrollments",
            &application.sandbox_key,
            &application.secret,
            &body,
        )
        .header("x-device-id", &user.installation)
        .send()
        .await
        .unwrap(),
        201,
    )
    .await;
    user.enrollment_id = started["data"]["enrollmentId"].as_str().unwrap().to_owned();
    user.register(app).await;
    json(user.verify(app).await, 200).await;
    (application, user)
}

/// Another installation of `user`'s phone that registers a passkey; returns it and the
/// registration's `data`.
async fn second_device(app: &TestApp, user: &AppUser) -> (AppUser, Value) {
    let mut second = AppUser::new();
    second.phone = user.phone.clone();
    second.start_enrollment(app).await;
    let code = second.code(app).await;
    let begun = json(
        second
            .post(
                app,
                "/v1/auth/fido/register/begin",
                &json!({"enrollmentId": second.enrollment_id, "otp": code}),
            )
            .await,
        200,
    )
    .await;
    let credential = second
        .passkey
        .register(
            idconsent_e2e::enduser::ORIGIN,
            &json!({"publicKey": begun["data"]["publicKey"]}),
        )
        .unwrap();
    let registered = json(
        second
            .post(
                app,
                "/v1/auth/fido/register/complete",
                &json!({"challengeId": begun["data"]["challengeId"], "credential": credential}),
            )
            .await,
        201,
    )
    .await;
    second.device_id = registered["data"]["deviceId"].as_str().unwrap().to_owned();
    (second, registered["data"].clone())
}

async fn event_about(receiver: &Receiver, event_type: &str, device: &str) -> Received {
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == event_type
                        && r.json()["data"]["deviceId"].as_str() == Some(device)
                })
                .cloned()
        })
        .await
}

/// The first device decides on the second with a passkey assertion (purpose `device_add`).
async fn decide(app: &TestApp, first: &mut AppUser, device: &str, decision: &str) -> Value {
    let begun = first.begun(app, "device_add", Some(device)).await;
    assert_eq!(begun["context"]["type"], "device_add");
    assert_eq!(begun["context"]["deviceId"], device);
    assert_eq!(begun["context"]["name"], "Test phone");
    assert!(begun["context"]["requestedAt"].as_str().is_some());
    let credential = first.sign(&begun);
    json(
        first.complete(app, &begun, &credential, decision).await,
        200,
    )
    .await
}

/// What a modified app could do: sign the server's challenge with its own passkey, whichever
/// credentials the server offered.
fn sign_anyway(device: &mut AppUser, begun: &Value, credential_id: &Value) -> Value {
    let mut options = json!({"publicKey": begun["publicKey"]});
    options["publicKey"]["allowCredentials"] = json!([{"type": "public-key", "id": credential_id}]);
    device
        .passkey
        .authenticate(idconsent_e2e::enduser::ORIGIN, &options)
        .unwrap()
}

/// The devices as `user`'s app lists them.
async fn devices_of(app: &TestApp, user: &mut AppUser) -> Vec<Value> {
    let tokens = user.login(app).await;
    let listed = json(
        user.authorized(app, Method::GET, "/v1/devices", &tokens["accessToken"])
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    listed["data"]["devices"].as_array().unwrap().clone()
}

fn status_of(devices: &[Value], id: &str) -> Value {
    devices
        .iter()
        .find(|device| device["id"] == id)
        .map(|device| device["status"].clone())
        .unwrap_or(Value::Null)
}

async fn a_second_device_waits_for_the_first_and_can_then_approve(app: TestApp) {
    let receiver = Receiver::start().await;
    let (application, mut first) = enrolled_with_merchant(&app, &receiver).await;

    // The SMS code alone buys a pending device: it is reported, the phone is told, and it
    // can neither finish its enrollment nor sign in nor approve anything.
    let (mut second, registered) = second_device(&app, &first).await;
    assert_eq!(registered["status"], "pending");
    let reported = event_about(&receiver, "device.registered", &second.device_id).await;
    assert_eq!(reported.json()["data"]["status"], "pending");
    let warned = app.last_message(&first.phone).await;
    assert!(
        warned["body"].as_str().unwrap().contains("asks to join"),
        "{warned}"
    );
    let refused = error(second.verify(&app).await, 401, "unauthorized").await;
    assert!(
        refused["message"]
            .as_str()
            .unwrap()
            .contains("waits for approval"),
        "{refused}"
    );
    let session = consent(&app, &application, &receiver, &first.phone).await;
    let begun = second.begun(&app, "consent", Some(&session)).await;
    let forged = sign_anyway(&mut second, &begun, &registered["credentialId"]);
    error(
        second.complete(&app, &begun, &forged, "approve").await,
        401,
        "unauthorized",
    )
    .await;
    assert_eq!(
        status_of(&devices_of(&app, &mut first).await, &second.device_id),
        "pending"
    );

    // The pending device cannot approve itself: only active devices' passkeys are offered.
    let begun = second
        .begun(&app, "device_add", Some(&second.device_id.clone()))
        .await;
    let itself = sign_anyway(&mut second, &begun, &registered["credentialId"]);
    error(
        second.complete(&app, &begun, &itself, "approve").await,
        401,
        "unauthorized",
    )
    .await;

    // The first device approves it; a second decision finds nothing pending.
    let approved = decide(&app, &mut first, &second.device_id.clone(), "approve").await;
    assert_eq!(approved["data"]["status"], "active");
    let activated = event_about(&receiver, "device.activated", &second.device_id).await;
    assert_eq!(activated.json()["data"]["activatedBy"], "device");
    assert_eq!(
        activated.json()["data"]["approvedBy"],
        first.device_id.as_str()
    );
    let again = first
        .begin(&app, "device_add", Some(&second.device_id.clone()))
        .await;
    error(again, 409, "conflict").await;

    // Now the second device finishes its enrollment and approves a consent.
    json(second.verify(&app).await, 200).await;
    let begun = second.begun(&app, "consent", Some(&session)).await;
    let credential = second.sign(&begun);
    let decided = json(
        second.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(decided["data"]["status"], "approved");
}

async fn a_rejected_device_never_authenticates(app: TestApp) {
    let receiver = Receiver::start().await;
    let (_, mut first) = enrolled_with_merchant(&app, &receiver).await;
    let (second, _) = second_device(&app, &first).await;
    let rejected = decide(&app, &mut first, &second.device_id.clone(), "reject").await;
    assert_eq!(rejected["data"]["status"], "deregistered");
    event_about(&receiver, "device.deregistered", &second.device_id).await;
    assert_eq!(
        status_of(&devices_of(&app, &mut first).await, &second.device_id),
        "deregistered"
    );
    // Its passkey is no longer offered, even to finish its own enrollment.
    let begun = second
        .begin(&app, "enrollment", Some(&second.enrollment_id.clone()))
        .await;
    error(begun, 404, "not_found").await;
    // Nor can a recovery revive it.
    let recovery = second
        .request(
            &app,
            Method::POST,
            &format!("/v1/enrollments/{}/recovery", second.enrollment_id),
        )
        .send()
        .await
        .unwrap();
    error(recovery, 409, "conflict").await;
}

async fn start_recovery(app: &TestApp, device: &AppUser) -> reqwest::Response {
    device
        .request(
            app,
            Method::POST,
            &format!("/v1/enrollments/{}/recovery", device.enrollment_id),
        )
        .send()
        .await
        .unwrap()
}

async fn a_recovery_activates_the_device_after_the_cooling_off_period(app: TestApp) {
    let receiver = Receiver::start().await;
    let (_, mut first) = enrolled_with_merchant(&app, &receiver).await;
    let (mut second, _) = second_device(&app, &first).await;

    // Only the installation that enrolled may start it, and only once.
    let mut stranger = AppUser::new();
    stranger.enrollment_id = second.enrollment_id.clone();
    error(start_recovery(&app, &stranger).await, 404, "not_found").await;
    let started = json(start_recovery(&app, &second).await, 202).await;
    assert_eq!(started["data"]["status"], "pending");
    let ends_at = started["data"]["recoveryEndsAt"]
        .as_str()
        .unwrap()
        .to_owned();
    error(start_recovery(&app, &second).await, 409, "conflict").await;

    // Every application that enrolled one of the phone's devices hears of it, and the phone
    // gets an SMS; the existing device sees when it ends.
    let told = event_about(&receiver, "device.recovery_started", &second.device_id).await;
    assert_eq!(told.json()["data"]["recoveryEndsAt"], ends_at.as_str());
    let warned = app.last_message(&first.phone).await;
    assert!(
        warned["body"].as_str().unwrap().contains("recovery"),
        "{warned}"
    );
    let listed = devices_of(&app, &mut first).await;
    let pending = listed
        .iter()
        .find(|device| device["id"] == second.device_id.as_str())
        .unwrap();
    assert_eq!(pending["recoveryEndsAt"], ends_at.as_str());

    // An hour before the end it is still pending.
    app.advance(Duration::from_secs(71 * 3600));
    error(second.verify(&app).await, 401, "unauthorized").await;
    // After it, the sweeper activates it without anyone asking.
    app.advance(Duration::from_secs(3600 + 1));
    let activated = event_about(&receiver, "device.activated", &second.device_id).await;
    assert_eq!(activated.json()["data"]["activatedBy"], "recovery");
    json(second.verify(&app).await, 200).await;
}

async fn a_recovery_is_cancelled_from_an_existing_device(app: TestApp) {
    let receiver = Receiver::start().await;
    let (_, mut first) = enrolled_with_merchant(&app, &receiver).await;
    let (second, _) = second_device(&app, &first).await;
    json(start_recovery(&app, &second).await, 202).await;
    let tokens = first.login(&app).await;
    let removed = json(
        first
            .authorized(
                &app,
                Method::DELETE,
                &format!("/v1/devices/{}", second.device_id),
                &tokens["accessToken"],
            )
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(removed["data"]["status"], "deregistered");
    // A third device's recovery is left to run, so that its activation proves the sweeper
    // has looked at both after their time.
    let (third, _) = second_device(&app, &first).await;
    json(start_recovery(&app, &third).await, 202).await;
    app.advance(Duration::from_secs(73 * 3600));
    event_about(&receiver, "device.activated", &third.device_id).await;
    let listed = devices_of(&app, &mut first).await;
    assert_eq!(status_of(&listed, &second.device_id), "deregistered");
    assert_eq!(status_of(&listed, &third.device_id), "active");
    let begun = second
        .begin(&app, "enrollment", Some(&second.enrollment_id.clone()))
        .await;
    error(begun, 404, "not_found").await;
}

/// A sandbox consent for `phone`.
async fn consent(
    app: &TestApp,
    application: &Application,
    receiver: &Receiver,
    phone: &str,
) -> String {
    let body = serde_json::to_vec(&json!({
        "clientId": application.client_id,
        "recipient": phone,
        "intent": "TRANSACTION",
        "callbackUrl": receiver.url,
        "transaction": {"type": "payment", "description": "Order 7", "amount": 5,
                        "currency": "EUR", "payee": "Example Shop"}
    }))
    .unwrap();
    let created = json(
        app.signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &body,
        )
        .send()
        .await
        .unwrap(),
        201,
    )
    .await;
    created["data"]["sessionId"].as_str().unwrap().to_owned()
}
