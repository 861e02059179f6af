//! Merchant onboarding, team, applications, operator review and signed requests (issue 3).

use idconsent_e2e::scenario::{PDF, PNG, now_millis};
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::Method;
use serde_json::json;

on_both_backends!(
    onboarding_to_live_then_rotation_kills_the_old_key,
    every_signed_request_refusal_has_its_message,
    a_signed_request_is_accepted_once,
    the_signature_covers_the_exact_bytes,
    duplicate_email_is_a_conflict,
    roles_limit_what_members_can_do,
    the_team_keeps_an_owner_and_removed_members_lose_access,
    verification_codes_are_single_use_and_rate_limited,
    documents_are_checked_before_they_are_kept,
    sign_in_locks_out_after_repeated_failures,
    concurrent_guesses_and_resends_get_no_more_than_sequential_ones,
    the_signing_secret_rotates_with_a_day_of_overlap,
    the_operator_can_reject_and_the_merchant_can_resubmit,
    applications_validate_their_urls_and_types,
);

async fn onboarding_to_live_then_rotation_kills_the_old_key(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    assert!(application.sandbox_key.starts_with("mk_test_"));
    assert!(application.secret.starts_with("sk_") && application.secret.len() == 67);
    assert!(application.webhook_secret.starts_with("whsec_"));
    assert!(application.client_id.starts_with("cli_"));

    // Nothing done yet: go-live lists every requirement.
    let blocked = app
        .as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
        .send()
        .await
        .unwrap();
    let blocked = error(blocked, 422, "validation_error").await;
    let fields: Vec<&str> = blocked["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "description",
            "usecase",
            "address",
            "documents.business_registration",
            "identityNumber",
            "documents.representative_id",
            "email",
            "phone"
        ],
        "the sandbox registry already verified the registration number"
    );

    app.complete_onboarding(&merchant).await;
    let me = json(
        app.as_merchant(Method::GET, "/v1/merchants/me", &merchant.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(me["data"]["goLive"]["ready"], true);
    assert_eq!(me["data"]["merchant"]["emailVerified"], true);
    assert_eq!(
        me["data"]["merchant"]["business"]["registryVerification"],
        "verified"
    );
    assert_eq!(
        me["data"]["merchant"]["business"]["identityNumberLast4"],
        "4567"
    );
    assert_eq!(me["data"]["documents"].as_array().unwrap().len(), 2);

    let submitted = app
        .as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(json(submitted, 202).await["data"]["status"], "in_review");
    let again = app
        .as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
        .send()
        .await
        .unwrap();
    error(again, 409, "conflict").await;

    let queue = json(
        app.as_operator(Method::GET, "/v1/admin/merchants?status=in_review")
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert!(
        queue["data"]["merchants"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == merchant.id.as_str())
    );
    let approved = app
        .as_operator(
            Method::POST,
            &format!("/v1/admin/merchants/{}/approve", merchant.id),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        json(approved, 200).await["data"]["merchant"]["status"],
        "live"
    );
    let email = app.last_message(&merchant.email).await;
    assert!(
        email["subject"].as_str().unwrap().contains("live"),
        "{email}"
    );

    let current = json(
        app.as_merchant(
            Method::GET,
            &format!("/v1/merchants/applications/{}", application.id),
            &merchant.token,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    let shown = &current["application"];
    assert_eq!(shown["environment"], "live");
    assert_eq!(shown["liveStatus"], "live");
    assert!(
        shown["credentials"]["sandbox"].get("secret").is_none(),
        "the secret is never shown again"
    );
    assert!(shown.get("webhookSecret").is_none());
    let live_key = shown["credentials"]["live"]["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(live_key.starts_with("mk_live_"));
    let me = json(
        app.as_merchant(Method::GET, "/v1/merchants/me", &merchant.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert!(
        me["data"]["documents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|d| d["status"] == "verified")
    );

    // The live key works; so does the sandbox key until it is rotated.
    let live = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &live_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(json(live, 200).await["data"]["deliveries"], json!([]));
    let sandbox = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(sandbox, 200).await;

    let rotated = app
        .as_merchant(
            Method::POST,
            &format!("/v1/merchants/applications/{}/rotate-key", application.id),
            &merchant.token,
        )
        .json(&json!({"environment": "sandbox"}))
        .send()
        .await
        .unwrap();
    let rotated = json(rotated, 200).await;
    assert_eq!(rotated["credential"]["environment"], "sandbox");
    let new_key = rotated["credential"]["apiKey"].as_str().unwrap().to_owned();
    assert!(new_key.starts_with("mk_test_") && new_key != application.sandbox_key);
    assert!(rotated["credential"].get("secret").is_none());

    let old = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(old, 401, "unauthorized").await["message"],
        "Invalid API key"
    );
    // The secret is unchanged: the new key signs with it.
    let new = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &new_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(new, 200).await;

    let live_rotated = app
        .as_merchant(
            Method::POST,
            &format!("/v1/merchants/applications/{}/rotate-key", application.id),
            &merchant.token,
        )
        .json(&json!({"environment": "live"}))
        .send()
        .await
        .unwrap();
    let live_rotated = json(live_rotated, 200).await["credential"]["apiKey"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(live_rotated.starts_with("mk_live_"));
    let old_live = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &live_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(old_live, 401, "unauthorized").await["message"],
        "Invalid API key"
    );

    // A new application of a live merchant gets live keys at once.
    let second = app
        .create_application(
            &merchant,
            &json!({"name": "Second", "callbackUrl": "https://shop.example/hooks"}),
        )
        .await;
    assert!(
        second["application"]["credentials"]["live"]["apiKey"]
            .as_str()
            .unwrap()
            .starts_with("mk_live_")
    );
}

async fn every_signed_request_refusal_has_its_message(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let path = "/v1/webhooks/deliveries";
    let message = |response: reqwest::Response| async move {
        error(response, 401, "unauthorized").await["message"].clone()
    };

    let no_key = app.client.get(app.url(path)).send().await.unwrap();
    assert_eq!(message(no_key).await, "Missing API key");

    let no_signature = app
        .client
        .get(app.url(path))
        .header("x-api-key", &application.sandbox_key)
        .send()
        .await
        .unwrap();
    assert_eq!(message(no_signature).await, "Missing signature");

    let unknown_key = app
        .signed(
            Method::GET,
            path,
            "mk_test_0000000000000000000000000000000000aa",
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(message(unknown_key).await, "Invalid API key");

    let wrong_secret = app
        .signed(
            Method::GET,
            path,
            &application.sandbox_key,
            "sk_not_the_secret",
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(message(wrong_secret).await, "Invalid signature");

    let stale = app
        .signed_at(
            Method::GET,
            path,
            &application.sandbox_key,
            &application.secret,
            b"",
            now_millis() - 6 * 60 * 1000,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        message(stale).await,
        "Request timestamp outside allowed window"
    );
    let future = app
        .signed_at(
            Method::GET,
            path,
            &application.sandbox_key,
            &application.secret,
            b"",
            now_millis() + 6 * 60 * 1000,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        message(future).await,
        "Request timestamp outside allowed window"
    );
    // Inside the window on either side is fine.
    for skew in [-4 * 60 * 1000, 4 * 60 * 1000] {
        let skewed = app
            .signed_at(
                Method::GET,
                path,
                &application.sandbox_key,
                &application.secret,
                b"",
                now_millis() + skew,
            )
            .send()
            .await
            .unwrap();
        json(skewed, 200).await;
    }
    let missing_timestamp = app
        .client
        .get(app.url(path))
        .header("x-api-key", &application.sandbox_key)
        .header("x-signature", "00".repeat(32))
        .send()
        .await
        .unwrap();
    assert_eq!(
        message(missing_timestamp).await,
        "Request timestamp outside allowed window"
    );

    let replay = app.signed(
        Method::GET,
        path,
        &application.sandbox_key,
        &application.secret,
        b"",
    );
    let first = replay.try_clone().unwrap().send().await.unwrap();
    json(first, 200).await;
    assert_eq!(
        message(replay.send().await.unwrap()).await,
        "Replayed request"
    );
}

async fn a_signed_request_is_accepted_once(app: TestApp) {
    // Two server processes on one database: a request accepted by one is refused by the other.
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let second = app.second_server().await;
    let request = app.signed(
        Method::GET,
        "/v1/webhooks/deliveries",
        &application.sandbox_key,
        &application.secret,
        b"",
    );
    let built = request.build().unwrap();
    let mut on_second = built.try_clone().unwrap();
    *on_second.url_mut() =
        reqwest::Url::parse(&format!("{}/v1/webhooks/deliveries", second.url())).unwrap();
    json(app.client.execute(built).await.unwrap(), 200).await;
    let replayed = app.client.execute(on_second).await.unwrap();
    assert_eq!(
        error(replayed, 401, "unauthorized").await["message"],
        "Replayed request"
    );
    second.stop().await;
}

async fn the_signature_covers_the_exact_bytes(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let compact = br#"{"status":"pending","page":1}"#;
    let pretty = b"{\n  \"status\": \"pending\",\n  \"page\": 1\n}";
    let timestamp = now_millis().to_string();
    let signature = idconsent_auth_hmac::sign_request(
        application.secret.as_bytes(),
        &application.sandbox_key,
        &timestamp,
        compact,
    );
    // Same JSON, other bytes: refused.
    let reserialised = app
        .client
        .get(app.url("/v1/webhooks/deliveries"))
        .header("x-api-key", &application.sandbox_key)
        .header("x-timestamp", &timestamp)
        .header("x-signature", &signature)
        .header("content-type", "application/json")
        .body(pretty.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(reserialised, 401, "unauthorized").await["message"],
        "Invalid signature"
    );
    // An upper-case hex signature is not the contract's lowercase hex.
    let upper = app
        .client
        .get(app.url("/v1/webhooks/deliveries"))
        .header("x-api-key", &application.sandbox_key)
        .header("x-timestamp", &timestamp)
        .header("x-signature", signature.to_uppercase())
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(upper, 401, "unauthorized").await["message"],
        "Invalid signature"
    );
    // The empty-body signature is over `key:timestamp:`.
    let empty = app
        .signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(empty, 200).await;
}

async fn duplicate_email_is_a_conflict(app: TestApp) {
    let body = app.registration();
    app.register_with(&body).await;
    let mut again = body.clone();
    again["phone"] = json!("+15550001111");
    let duplicate = app.post_json("/v1/merchants/register", &again).await;
    error(duplicate, 409, "conflict").await;
    // The same address with an upper-case domain is the same address.
    let email = body["email"]
        .as_str()
        .unwrap()
        .replace("shop.example", "SHOP.EXAMPLE");
    again["email"] = json!(email);
    error(
        app.post_json("/v1/merchants/register", &again).await,
        409,
        "conflict",
    )
    .await;

    let mut invalid = app.registration();
    invalid["phone"] = json!("555-1234");
    invalid["dateRegistered"] = json!("2019-02-30");
    invalid["password"] = json!("short");
    let refused = error(
        app.post_json("/v1/merchants/register", &invalid).await,
        422,
        "validation_error",
    )
    .await;
    let fields: Vec<&str> = refused["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["password", "dateRegistered", "phone"]);
    let mut missing = app.registration();
    missing.as_object_mut().unwrap().remove("industry");
    error(
        app.post_json("/v1/merchants/register", &missing).await,
        400,
        "bad_request",
    )
    .await;
}

/// Invites a member with `role` and returns their session token.
async fn member(
    app: &TestApp,
    owner: &idconsent_e2e::scenario::Merchant,
    role: &str,
) -> (String, String, String) {
    let email = format!("{role}-{}@shop.example", idconsent_e2e::scenario::unique());
    let invited = app
        .as_merchant(Method::POST, "/v1/merchants/users", &owner.token)
        .json(&json!({"email": email, "name": "Member", "role": role}))
        .send()
        .await
        .unwrap();
    let invited = json(invited, 201).await;
    assert_eq!(invited["data"]["user"]["status"], "invited");
    let id = invited["data"]["user"]["id"].as_str().unwrap().to_owned();
    let link = app.last_message(&email).await["link"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(link.starts_with("http://dashboard.test/accept-invite?token="));
    let token = link.split("token=").nth(1).unwrap();
    let accepted = app
        .post_json(
            "/v1/merchants/users/accept",
            &json!({"token": token, "password": "another good password"}),
        )
        .await;
    let session = json(accepted, 200).await["data"]["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // The link is single use.
    let again = app
        .post_json(
            "/v1/merchants/users/accept",
            &json!({"token": token, "password": "another good password"}),
        )
        .await;
    error(again, 400, "bad_request").await;
    (id, session, email)
}

async fn roles_limit_what_members_can_do(app: TestApp) {
    let owner = app.register_merchant().await;
    let application = app.application(&owner).await;
    let (_, viewer, _) = member(&app, &owner, "viewer").await;
    let (_, developer, _) = member(&app, &owner, "developer").await;
    let rotate = |token: String| {
        app.as_merchant(
            Method::POST,
            &format!("/v1/merchants/applications/{}/rotate-key", application.id),
            &token,
        )
        .json(&json!({"environment": "sandbox"}))
        .send()
    };
    error(rotate(viewer.clone()).await.unwrap(), 403, "forbidden").await;
    json(rotate(developer.clone()).await.unwrap(), 200).await;
    // Live rotation before live credentials exist.
    let live = app
        .as_merchant(
            Method::POST,
            &format!("/v1/merchants/applications/{}/rotate-key", application.id),
            &developer,
        )
        .json(&json!({"environment": "live"}))
        .send()
        .await
        .unwrap();
    error(live, 409, "conflict").await;
    let bogus = app
        .as_merchant(
            Method::POST,
            &format!("/v1/merchants/applications/{}/rotate-key", application.id),
            &developer,
        )
        .json(&json!({"environment": "staging"}))
        .send()
        .await
        .unwrap();
    error(bogus, 422, "validation_error").await;
    // Viewers read but do not change; developers cannot touch the account.
    json(
        app.as_merchant(Method::GET, "/v1/merchants/applications", &viewer)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let create = app
        .as_merchant(Method::POST, "/v1/merchants/applications", &viewer)
        .json(&json!({"name": "x", "callbackUrl": "https://x.example/"}))
        .send()
        .await
        .unwrap();
    error(create, 403, "forbidden").await;
    let profile = app
        .as_merchant(Method::PATCH, "/v1/merchants/business", &developer)
        .json(&json!({"address": "elsewhere"}))
        .send()
        .await
        .unwrap();
    error(profile, 403, "forbidden").await;
    // Another merchant's application does not exist for this one.
    let stranger = app.register_merchant().await;
    let foreign = app
        .as_merchant(
            Method::GET,
            &format!("/v1/merchants/applications/{}", application.id),
            &stranger.token,
        )
        .send()
        .await
        .unwrap();
    error(foreign, 404, "not_found").await;
    let webhook = app
        .as_merchant(
            Method::POST,
            &format!(
                "/v1/merchants/applications/{}/rotate-webhook-secret",
                application.id
            ),
            &developer,
        )
        .send()
        .await
        .unwrap();
    let webhook = json(webhook, 200).await;
    assert!(
        webhook["data"]["webhookSecret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );
    assert_ne!(
        webhook["data"]["webhookSecret"],
        application.webhook_secret.as_str()
    );
}

async fn the_team_keeps_an_owner_and_removed_members_lose_access(app: TestApp) {
    let owner = app.register_merchant().await;
    let (admin_id, admin, _) = member(&app, &owner, "admin").await;
    let (developer_id, developer, _) = member(&app, &owner, "developer").await;
    let team = json(
        app.as_merchant(Method::GET, "/v1/merchants/users", &developer)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(team["data"]["users"].as_array().unwrap().len(), 3);

    let invite_owner = app
        .as_merchant(Method::POST, "/v1/merchants/users", &admin)
        .json(&json!({"email": "new-owner@shop.example", "name": "N", "role": "owner"}))
        .send()
        .await
        .unwrap();
    error(invite_owner, 422, "validation_error").await;
    let existing = app
        .as_merchant(Method::POST, "/v1/merchants/users", &admin)
        .json(&json!({"email": owner.email, "name": "N", "role": "viewer"}))
        .send()
        .await
        .unwrap();
    error(existing, 409, "conflict").await;

    let me = json(
        app.as_merchant(Method::GET, "/v1/merchants/me", &owner.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    let owner_id = me["data"]["user"]["id"].as_str().unwrap().to_owned();
    let admin_removes_owner = app
        .as_merchant(
            Method::DELETE,
            &format!("/v1/merchants/users/{owner_id}"),
            &admin,
        )
        .send()
        .await
        .unwrap();
    error(admin_removes_owner, 403, "forbidden").await;
    let last_owner = app
        .as_merchant(
            Method::DELETE,
            &format!("/v1/merchants/users/{owner_id}"),
            &owner.token,
        )
        .send()
        .await
        .unwrap();
    error(last_owner, 409, "conflict").await;
    let developer_removes = app
        .as_merchant(
            Method::DELETE,
            &format!("/v1/merchants/users/{admin_id}"),
            &developer,
        )
        .send()
        .await
        .unwrap();
    error(developer_removes, 403, "forbidden").await;

    let removed = app
        .as_merchant(
            Method::DELETE,
            &format!("/v1/merchants/users/{developer_id}"),
            &admin,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        json(removed, 200).await["data"]["user"]["status"],
        "removed"
    );
    // The removed member's token stops working at once.
    let after = app
        .as_merchant(Method::GET, "/v1/merchants/me", &developer)
        .send()
        .await
        .unwrap();
    error(after, 401, "unauthorized").await;
    let unknown = app
        .as_merchant(Method::DELETE, "/v1/merchants/users/usr_nobody", &admin)
        .send()
        .await
        .unwrap();
    error(unknown, 404, "not_found").await;
}

async fn verification_codes_are_single_use_and_rate_limited(app: TestApp) {
    let merchant = app.register_merchant().await;
    // Registration just sent both: an immediate resend is too soon.
    let resend = app
        .as_merchant(Method::POST, "/v1/merchants/phone/resend", &merchant.token)
        .send()
        .await
        .unwrap();
    assert!(resend.headers().get("retry-after").is_some());
    error(resend, 429, "rate_limited").await;
    let resend = app
        .as_merchant(Method::POST, "/v1/merchants/email/resend", &merchant.token)
        .send()
        .await
        .unwrap();
    error(resend, 429, "rate_limited").await;

    let wrong = app
        .as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
        .json(&json!({"code": "000000"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(wrong, 400, "bad_request").await["message"],
        "Invalid or expired code"
    );

    let link = app.last_message(&merchant.email).await["link"]
        .as_str()
        .unwrap()
        .to_owned();
    let token = link.split("token=").nth(1).unwrap().to_owned();
    json(
        app.post_json("/v1/merchants/email/verify-link", &json!({"token": token}))
            .await,
        200,
    )
    .await;
    let reused = app
        .post_json("/v1/merchants/email/verify-link", &json!({"token": token}))
        .await;
    assert_eq!(
        error(reused, 400, "bad_request").await["message"],
        "Invalid or expired link"
    );
    let garbage = app
        .post_json(
            "/v1/merchants/email/verify-link",
            &json!({"token": "not-a-token"}),
        )
        .await;
    error(garbage, 400, "bad_request").await;

    // Five wrong guesses spend the code: even the right one fails afterwards.
    let code = app.last_message(&merchant.phone).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong_code = if code == "111111" { "222222" } else { "111111" };
    for _ in 0..5 {
        let guess = app
            .as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
            .json(&json!({"code": wrong_code}))
            .send()
            .await
            .unwrap();
        error(guess, 400, "bad_request").await;
    }
    let right = app
        .as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
        .json(&json!({"code": code}))
        .send()
        .await
        .unwrap();
    error(right, 400, "bad_request").await;
}

async fn documents_are_checked_before_they_are_kept(app: TestApp) {
    let merchant = app.register_merchant().await;
    json(
        app.upload(&merchant, "tax_document", "application/pdf", PDF)
            .await,
        201,
    )
    .await;
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "business_registration",
            "application/pdf",
            PNG.to_vec(),
            "contentBase64",
        ),
        (
            "business_registration",
            "image/gif",
            b"GIF89a".to_vec(),
            "mimeType",
        ),
        ("passport_scan", "application/pdf", PDF.to_vec(), "type"),
    ];
    for (kind, mime, content, field) in cases {
        let refused = error(
            app.upload(&merchant, kind, mime, &content).await,
            422,
            "validation_error",
        )
        .await;
        assert_eq!(refused["details"][0]["field"], field, "{refused}");
    }
    let lying_size = app
        .as_merchant(Method::POST, "/v1/merchants/documents", &merchant.token)
        .json(&json!({"type": "tax_document", "fileName": "t.pdf", "mimeType": "application/pdf", "size": 5, "contentBase64": "JVBERi0xLjQK"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        error(lying_size, 422, "validation_error").await["details"][0]["field"],
        "size"
    );
    let not_base64 = app
        .as_merchant(Method::POST, "/v1/merchants/documents", &merchant.token)
        .json(&json!({"type": "tax_document", "fileName": "t.pdf", "mimeType": "application/pdf", "size": 5, "contentBase64": "%%%"}))
        .send()
        .await
        .unwrap();
    error(not_base64, 422, "validation_error").await;
    let path_name = app
        .as_merchant(Method::POST, "/v1/merchants/documents", &merchant.token)
        .json(&json!({"type": "tax_document", "fileName": "../../etc/passwd", "mimeType": "application/pdf", "size": PDF.len(), "contentBase64": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, PDF)}))
        .send()
        .await
        .unwrap();
    error(path_name, 422, "validation_error").await;
    // Eleven MiB of PDF: over the 10 MiB limit, inside the 15 MiB body limit.
    let mut big = PDF.to_vec();
    big.resize(11 << 20, b' ');
    error(
        app.upload(&merchant, "tax_document", "application/pdf", &big)
            .await,
        422,
        "validation_error",
    )
    .await;
    let me = json(
        app.as_merchant(Method::GET, "/v1/merchants/me", &merchant.token)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        me["data"]["documents"].as_array().unwrap().len(),
        1,
        "only the valid upload is kept"
    );
}

async fn sign_in_locks_out_after_repeated_failures(app: TestApp) {
    let body = app.registration();
    let merchant = app.register_with(&body).await;
    let login = |password: &str| {
        app.client
            .post(app.url("/v1/merchants/login"))
            .json(&json!({"email": merchant.email, "password": password}))
            .send()
    };
    let ok = json(login("correct horse battery staple").await.unwrap(), 200).await;
    assert!(ok["data"]["token"].as_str().unwrap().split('.').count() == 3);
    assert_eq!(ok["data"]["expiresIn"], 3600);
    let unknown = app
        .post_json(
            "/v1/merchants/login",
            &json!({"email": "nobody@shop.example", "password": "whatever else"}),
        )
        .await;
    assert_eq!(
        error(unknown, 401, "unauthorized").await["message"],
        "Invalid email or password"
    );
    for _ in 0..10 {
        error(login("wrong password!").await.unwrap(), 401, "unauthorized").await;
    }
    // Locked: even the right password waits.
    let locked = login("correct horse battery staple").await.unwrap();
    assert!(locked.headers().get("retry-after").is_some());
    error(locked, 429, "rate_limited").await;
    // Fifteen minutes later the member may sign in again.
    app.advance(std::time::Duration::from_secs(15 * 60));
    json(login("correct horse battery staple").await.unwrap(), 200).await;
    let forged = app
        .as_merchant(Method::GET, "/v1/merchants/me", "eyJhbGciOiJub25lIn0.e30.")
        .send()
        .await
        .unwrap();
    error(forged, 401, "unauthorized").await;
}

/// Issue 12 §1 and §4: twenty parallel requests get what twenty sequential ones would.
async fn concurrent_guesses_and_resends_get_no_more_than_sequential_ones(app: TestApp) {
    let merchant = app.register_merchant().await;
    // Twenty wrong passwords at once: ten are checked (401), ten find the lock (429).
    let guesses = (0..20).map(|_| {
        app.client
            .post(app.url("/v1/merchants/login"))
            .json(&json!({"email": merchant.email, "password": "wrong password!"}))
            .send()
    });
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for guess in futures_util::future::join_all(guesses).await {
        *statuses
            .entry(guess.unwrap().status().as_u16())
            .or_default() += 1;
    }
    assert_eq!(statuses, [(401, 10), (429, 10)].into(), "{statuses:?}");

    // Twenty wrong phone codes at once: five are counted, the rest find the code spent, and the
    // right code fails afterwards.
    let code = app.last_message(&merchant.phone).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let wrong_code = if code == "111111" { "222222" } else { "111111" };
    let guesses = (0..20).map(|_| {
        app.as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
            .json(&json!({"code": wrong_code}))
            .send()
    });
    for guess in futures_util::future::join_all(guesses).await {
        error(guess.unwrap(), 400, "bad_request").await;
    }
    let right = app
        .as_merchant(Method::POST, "/v1/merchants/phone/verify", &merchant.token)
        .json(&json!({"code": code}))
        .send()
        .await
        .unwrap();
    error(right, 400, "bad_request").await;

    // A minute on, twenty resends at once send exactly one new code.
    app.advance(std::time::Duration::from_secs(61));
    let before = app.messages(&merchant.phone).await.len();
    let resends = (0..20).map(|_| {
        app.as_merchant(Method::POST, "/v1/merchants/phone/resend", &merchant.token)
            .send()
    });
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for resend in futures_util::future::join_all(resends).await {
        *statuses
            .entry(resend.unwrap().status().as_u16())
            .or_default() += 1;
    }
    assert_eq!(statuses.get(&429), Some(&19), "{statuses:?}");
    assert_eq!(statuses.len(), 2, "{statuses:?}");
    assert_eq!(app.messages(&merchant.phone).await.len(), before + 1);
}

/// Issue 12 §5: `rotate-secret` issues a new `sk_` secret; requests signed with the previous one
/// are accepted for 24 hours, then refused. Owners and admins only.
async fn the_signing_secret_rotates_with_a_day_of_overlap(app: TestApp) {
    let owner = app.register_merchant().await;
    let application = app.application(&owner).await;
    let path = format!(
        "/v1/merchants/applications/{}/rotate-secret",
        application.id
    );
    let (_, developer, _) = member(&app, &owner, "developer").await;
    let refused = app
        .as_merchant(Method::POST, &path, &developer)
        .send()
        .await
        .unwrap();
    error(refused, 403, "forbidden").await;
    let stranger = app.register_merchant().await;
    let foreign = app
        .as_merchant(Method::POST, &path, &stranger.token)
        .send()
        .await
        .unwrap();
    error(foreign, 404, "not_found").await;

    let rotated = app
        .as_merchant(Method::POST, &path, &owner.token)
        .send()
        .await
        .unwrap();
    let rotated = json(rotated, 200).await;
    let secret = rotated["data"]["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("sk_"), "{rotated}");
    assert_ne!(secret, application.secret);
    assert!(rotated["data"]["previousSecretExpiresAt"].is_string());

    let status_with = |secret: String| {
        let request = app.signed(
            Method::GET,
            "/v1/webhooks/deliveries",
            &application.sandbox_key,
            &secret,
            b"",
        );
        async move { request.send().await.unwrap().status().as_u16() }
    };
    assert_eq!(status_with(secret.clone()).await, 200);
    assert_eq!(status_with(application.secret.clone()).await, 200);
    app.advance(std::time::Duration::from_secs(24 * 3600 + 1));
    assert_eq!(status_with(secret.clone()).await, 200);
    assert_eq!(status_with(application.secret.clone()).await, 401);
}

async fn the_operator_can_reject_and_the_merchant_can_resubmit(app: TestApp) {
    let merchant = app.register_merchant().await;
    app.complete_onboarding(&merchant).await;
    json(
        app.as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    let anonymous = app
        .client
        .post(app.url(&format!("/v1/admin/merchants/{}/reject", merchant.id)))
        .json(&json!({"reason": "x"}))
        .send()
        .await
        .unwrap();
    error(anonymous, 401, "unauthorized").await;
    let no_reason = app
        .as_operator(
            Method::POST,
            &format!("/v1/admin/merchants/{}/reject", merchant.id),
        )
        .json(&json!({"reason": " "}))
        .send()
        .await
        .unwrap();
    error(no_reason, 422, "validation_error").await;
    let rejected = app
        .as_operator(
            Method::POST,
            &format!("/v1/admin/merchants/{}/reject", merchant.id),
        )
        .json(&json!({"reason": "The registration certificate is unreadable"}))
        .send()
        .await
        .unwrap();
    let rejected = json(rejected, 200).await;
    assert_eq!(rejected["data"]["merchant"]["status"], "rejected");
    assert_eq!(
        rejected["data"]["merchant"]["rejectionReason"],
        "The registration certificate is unreadable"
    );
    assert!(
        app.last_message(&merchant.email).await["body"]
            .as_str()
            .unwrap()
            .contains("unreadable")
    );
    let approve_rejected = app
        .as_operator(
            Method::POST,
            &format!("/v1/admin/merchants/{}/approve", merchant.id),
        )
        .send()
        .await
        .unwrap();
    error(approve_rejected, 409, "conflict").await;
    json(
        app.upload(&merchant, "business_registration", "application/pdf", PDF)
            .await,
        201,
    )
    .await;
    json(
        app.as_merchant(Method::POST, "/v1/merchants/go-live", &merchant.token)
            .send()
            .await
            .unwrap(),
        202,
    )
    .await;
    let unknown = app
        .as_operator(Method::POST, "/v1/admin/merchants/mer_nothing/approve")
        .send()
        .await
        .unwrap();
    error(unknown, 404, "not_found").await;
    error(
        app.as_operator(Method::GET, "/v1/admin/merchants?status=sleeping")
            .send()
            .await
            .unwrap(),
        422,
        "validation_error",
    )
    .await;
    error(
        app.as_operator(Method::GET, "/v1/admin/merchants?limit=101")
            .send()
            .await
            .unwrap(),
        422,
        "validation_error",
    )
    .await;
}

async fn applications_validate_their_urls_and_types(app: TestApp) {
    let merchant = app.register_merchant().await;
    let refused = app
        .as_merchant(Method::POST, "/v1/merchants/applications", &merchant.token)
        .json(&json!({
            "name": "",
            "callbackUrl": "ftp://shop.example/hooks",
            "redirectUris": ["http://shop.example/callback", "https://shop.example/cb#fragment"],
            "requestTypes": ["LOGIN", "PAYMENT"]
        }))
        .send()
        .await
        .unwrap();
    let refused = error(refused, 422, "validation_error").await;
    let fields: Vec<&str> = refused["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "name",
            "callbackUrl",
            "redirectUris[0]",
            "redirectUris[1]",
            "requestTypes[1]"
        ]
    );
    // The application's name is shown on the wallet's approval prompt: no text-direction or
    // zero-width characters (issue 12 §5).
    for name in ["Shop\u{202E}kcab", "Sh\u{200D}op"] {
        let spoofing = app
            .as_merchant(Method::POST, "/v1/merchants/applications", &merchant.token)
            .json(&json!({"name": name, "callbackUrl": "https://shop.example/hooks"}))
            .send()
            .await
            .unwrap();
        let spoofing = error(spoofing, 422, "validation_error").await;
        assert_eq!(spoofing["details"][0]["field"], "name", "{spoofing}");
    }

    let created = app
        .create_application(&merchant, &json!({"name": "Loopback", "callbackUrl": "https://shop.example/hooks", "redirectUris": ["http://localhost:3000/cb"], "requestTypes": ["OAUTH"]}))
        .await;
    let application = &created["application"];
    assert_eq!(application["requestTypes"], json!(["OAUTH"]));
    assert_eq!(application["environment"], "sandbox");
    assert_eq!(application["credentials"]["live"]["apiKey"], json!(null));
    let id = application["id"].as_str().unwrap();
    let updated = app
        .as_merchant(
            Method::PATCH,
            &format!("/v1/merchants/applications/{id}"),
            &merchant.token,
        )
        .json(&json!({"name": "Renamed", "requestTypes": []}))
        .send()
        .await
        .unwrap();
    error(updated, 422, "validation_error").await;
    let updated = app
        .as_merchant(
            Method::PATCH,
            &format!("/v1/merchants/applications/{id}"),
            &merchant.token,
        )
        .json(&json!({"name": "Renamed"}))
        .send()
        .await
        .unwrap();
    let updated = json(updated, 200).await;
    assert_eq!(updated["application"]["name"], "Renamed");
    assert_eq!(
        updated["application"]["redirectUris"],
        json!(["http://localhost:3000/cb"])
    );
    let list = json(
        app.as_merchant(
            Method::GET,
            "/v1/merchants/applications?limit=1",
            &merchant.token,
        )
        .send()
        .await
        .unwrap(),
        200,
    )
    .await;
    assert_eq!(
        list["data"]["pagination"],
        json!({"page": 1, "limit": 1, "total": 1})
    );
}

mod private_callbacks {
    use super::*;
    use idconsent_e2e::Backend;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn are_refused_unless_allowed() {
        let app = TestApp::start_with(Backend::Sqlite, |config| {
            config.webhooks.allow_private_callbacks = false
        })
        .await
        .unwrap();
        let merchant = app.register_merchant().await;
        for private in [
            "http://127.0.0.1/hooks",
            "http://localhost:8080/hooks",
            "http://169.254.169.254/latest",
            "http://10.0.0.5/x",
            "http://[::1]/x",
        ] {
            let refused = app
                .as_merchant(Method::POST, "/v1/merchants/applications", &merchant.token)
                .json(&json!({"name": "x", "callbackUrl": private}))
                .send()
                .await
                .unwrap();
            let refused = error(refused, 422, "validation_error").await;
            assert_eq!(refused["details"][0]["field"], "callbackUrl", "{private}");
        }
        app.stop().await;
    }
}
