//! The mobile app's API: enrollments, passkey ceremonies, app tokens and devices, with the
//! events a merchant-created enrollment sends.

use idconsent_e2e::enduser::{AppUser, ORIGIN};
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::{TestApp, json};
use idconsent_passkey_soft::tamper_signature;
use reqwest::Method;
use serde_json::{Value, json};

use super::Contract;
use super::consents::{consent_body, signed};

/// Waits for an event whose `data` has `field` (a path of keys) equal to `value`.
async fn event(receiver: &Receiver, event_type: &str, field: &[&str], value: &str) -> Received {
    receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    let data = field
                        .iter()
                        .fold(r.json()["data"].clone(), |v, k| v[k].clone());
                    r.event_type() == event_type && data.as_str() == Some(value)
                })
                .cloned()
        })
        .await
}

pub async fn walk(app: &TestApp, contract: &mut Contract) {
    let receiver = Receiver::start().await;
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;

    // A merchant enrolls a user with a signed request: its application hears the events.
    let mut user = AppUser::new();
    let started = contract
        .response(
            "POST /v1/enrollments",
            "signed",
            app.signed(
                Method::POST,
                "/v1/enrollments",
                &application.sandbox_key,
                &application.secret,
                &serde_json::to_vec(&json!({
                    "phone": user.phone, "name": "Ada", "deviceName": "Pixel 9", "platform": "android"
                }))
                .unwrap(),
            )
            .header("x-device-id", &user.installation)
            .send()
            .await
            .unwrap(),
        )
        .await;
    user.enrollment_id = started["data"]["enrollmentId"].as_str().unwrap().to_owned();
    let enrollment_path = format!("/v1/enrollments/{}", user.enrollment_id);
    contract
        .response(
            "GET /v1/enrollments/{id}",
            "pending otp",
            user.request(app, Method::GET, &enrollment_path)
                .send()
                .await
                .unwrap(),
        )
        .await;
    let code = user.code(app).await;
    let begun = contract
        .response(
            "POST /v1/auth/fido/register/begin",
            "",
            user.post(
                app,
                "/v1/auth/fido/register/begin",
                &json!({"enrollmentId": user.enrollment_id, "otp": code}),
            )
            .await,
        )
        .await;
    let credential = user
        .passkey
        .register(
            idconsent_e2e::enduser::ORIGIN,
            &json!({"publicKey": begun["data"]["publicKey"]}),
        )
        .unwrap();
    let registered = contract
        .response(
            "POST /v1/auth/fido/register/complete",
            "",
            user.post(
                app,
                "/v1/auth/fido/register/complete",
                &json!({"challengeId": begun["data"]["challengeId"], "credential": credential}),
            )
            .await,
        )
        .await;
    user.device_id = registered["data"]["deviceId"].as_str().unwrap().to_owned();
    contract.event(
        "",
        &event(
            &receiver,
            "device.registered",
            &["deviceId"],
            &user.device_id,
        )
        .await,
    );
    contract
        .response(
            "GET /v1/enrollments/{id}",
            "passkey registered, signed",
            signed(app, &application, Method::GET, &enrollment_path, None).await,
        )
        .await;
    let begun = contract
        .response(
            "POST /v1/auth/fido/authenticate/begin",
            "enrollment",
            user.begin(app, "enrollment", Some(&user.enrollment_id.clone()))
                .await,
        )
        .await["data"]
        .clone();
    let credential = user.sign(&begun);
    contract
        .response(
            "POST /v1/enrollments/{id}/verify",
            "",
            user.post(
                app,
                &format!("{enrollment_path}/verify"),
                &json!({"challengeId": begun["challengeId"], "credential": credential}),
            )
            .await,
        )
        .await;
    contract.event(
        "",
        &event(
            &receiver,
            "enrollment.completed",
            &["enrollmentId"],
            &user.enrollment_id,
        )
        .await,
    );
    contract.event(
        "enrollment",
        &event(
            &receiver,
            "auth.success",
            &["purpose", "id"],
            &user.enrollment_id,
        )
        .await,
    );

    // Signing in to the app, and a plain login assertion.
    let begun = contract
        .response(
            "POST /v1/auth/fido/authenticate/begin",
            "login",
            user.begin(app, "login", None).await,
        )
        .await["data"]
        .clone();
    let credential = user.sign(&begun);
    let tokens = contract
        .response(
            "POST /v6/auth/login",
            "",
            user.post(
                app,
                "/v6/auth/login",
                &json!({"challengeId": begun["challengeId"], "credential": credential}),
            )
            .await,
        )
        .await["data"]
        .clone();
    let tokens = contract
        .response(
            "POST /v6/auth/refresh",
            "",
            user.post(
                app,
                "/v6/auth/refresh",
                &json!({"refreshToken": tokens["refreshToken"]}),
            )
            .await,
        )
        .await["data"]
        .clone();
    let begun = user.begun(app, "login", None).await;
    let credential = user.sign(&begun);
    contract
        .response(
            "POST /v1/auth/fido/authenticate/complete",
            "login",
            user.complete(app, &begun, &credential, "approve").await,
        )
        .await;

    // A consent approved with the passkey, as the app shows and signs it.
    let body = consent_body(&application, &user.phone, &receiver.url);
    let created = json(
        signed(
            app,
            &application,
            Method::POST,
            "/v1/consents/auth",
            Some(&body),
        )
        .await,
        201,
    )
    .await;
    let session = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let begun = contract
        .response(
            "POST /v1/auth/fido/authenticate/begin",
            "consent",
            user.begin(app, "consent", Some(&session)).await,
        )
        .await["data"]
        .clone();
    let credential = user.sign(&begun);
    contract
        .response(
            "POST /v1/auth/fido/authenticate/complete",
            "consent",
            user.complete(app, &begun, &credential, "approve").await,
        )
        .await;
    contract.event(
        "consent",
        &event(&receiver, "auth.success", &["purpose", "id"], &session).await,
    );
    contract
        .response(
            "GET /v1/consents/auth/{sessionId}",
            "recipient app",
            user.authorized(
                app,
                Method::GET,
                &format!("/v1/consents/auth/{session}"),
                &tokens["accessToken"],
            )
            .send()
            .await
            .unwrap(),
        )
        .await;

    // A forged assertion: refused and reported.
    let created = json(
        signed(
            app,
            &application,
            Method::POST,
            "/v1/consents/auth",
            Some(&body),
        )
        .await,
        201,
    )
    .await;
    let session = created["data"]["sessionId"].as_str().unwrap().to_owned();
    let begun = user.begun(app, "consent", Some(&session)).await;
    let mut credential = user.sign(&begun);
    tamper_signature(&mut credential).unwrap();
    contract
        .response(
            "POST /v1/auth/fido/authenticate/complete",
            "tampered signature",
            user.complete(app, &begun, &credential, "approve").await,
        )
        .await;
    contract.event(
        "tampered signature",
        &event(&receiver, "auth.failed", &["purpose", "id"], &session).await,
    );

    // A second installation of the same phone: its device waits for approval; it starts a
    // recovery.
    let mut second = AppUser::new();
    second.phone = user.phone.clone();
    second.start_enrollment(app).await;
    let code = second.code(app).await;
    let begun = second
        .post(
            app,
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": second.enrollment_id, "otp": code}),
        )
        .await
        .json::<Value>()
        .await
        .unwrap();
    let credential = second
        .passkey
        .register(ORIGIN, &json!({"publicKey": begun["data"]["publicKey"]}))
        .unwrap();
    let registered = contract
        .response(
            "POST /v1/auth/fido/register/complete",
            "a second device, pending",
            second
                .post(
                    app,
                    "/v1/auth/fido/register/complete",
                    &json!({"challengeId": begun["data"]["challengeId"], "credential": credential}),
                )
                .await,
        )
        .await;
    let second_device = registered["data"]["deviceId"].as_str().unwrap().to_owned();
    contract.event(
        "pending",
        &event(&receiver, "device.registered", &["status"], "pending").await,
    );
    contract
        .response(
            "POST /v1/enrollments/{id}/recovery",
            "",
            second
                .request(
                    app,
                    Method::POST,
                    &format!("/v1/enrollments/{}/recovery", second.enrollment_id),
                )
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract.event(
        "",
        &event(
            &receiver,
            "device.recovery_started",
            &["deviceId"],
            &second_device,
        )
        .await,
    );

    // The user's devices.
    let token = &tokens["accessToken"];
    let device_path = format!("/v1/devices/{}", user.device_id);
    contract
        .response(
            "GET /v1/devices",
            "",
            user.authorized(app, Method::GET, "/v1/devices", token)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "GET /v1/devices/{id}",
            "",
            user.authorized(app, Method::GET, &device_path, token)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract
        .response(
            "DELETE /v1/devices/{id}",
            "",
            user.authorized(app, Method::DELETE, &device_path, token)
                .send()
                .await
                .unwrap(),
        )
        .await;
    contract.event(
        "",
        &event(
            &receiver,
            "device.deregistered",
            &["deviceId"],
            &user.device_id,
        )
        .await,
    );

    // Another user, enrolled from the app alone, blocks their phone.
    let mut other = AppUser::new();
    let started = contract
        .response(
            "POST /v1/enrollments",
            "anonymous",
            other
                .post(
                    app,
                    "/v1/enrollments",
                    &json!({"phone": other.phone, "deviceName": "Test phone", "platform": "ios"}),
                )
                .await,
        )
        .await;
    other.enrollment_id = started["data"]["enrollmentId"].as_str().unwrap().to_owned();
    other.register(app).await;
    json(other.verify(app).await, 200).await;
    let tokens: Value = other.login(app).await;
    contract
        .response(
            "POST /v1/devices/{id}/block",
            "",
            other
                .authorized(
                    app,
                    Method::POST,
                    &format!("/v1/devices/{}/block", other.device_id),
                    &tokens["accessToken"],
                )
                .send()
                .await
                .unwrap(),
        )
        .await;
}
