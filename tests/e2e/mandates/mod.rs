//! Digital mandates (issue 14): created with signed requests, authorised in the app with a
//! passkey (purpose `mandate`) or by the sandbox helpers, changed, cancelled, expired — and
//! `mandate.signed` by webhook.

use std::time::Duration;

use futures_util::future::join_all;
use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::receiver::{Received, Receiver};
use idconsent_e2e::scenario::{Application, unique};
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::{Method, Response};
use serde_json::{Value, json};

mod validation;

use validation::bad_requests_are_refused_and_change_nothing;

on_both_backends!(
    a_phone_recipient_authorises_with_a_passkey_and_the_merchant_hears_it,
    new_terms_need_re_authorisation_and_a_stale_challenge_signs_nothing,
    mandates_are_listed_filtered_paged_and_private,
    bad_requests_are_refused_and_change_nothing,
    unauthorised_mandates_expire_after_seven_days,
    concurrent_decisions_decide_once,
);

pub(super) fn phone() -> String {
    format!("+1555{}", &unique()[..7])
}

pub(super) fn mandate_body(recipient: &str) -> Value {
    json!({
        "recipient": recipient,
        "type": "direct_debit",
        "amount": 49.90,
        "currency": "EUR",
        "frequency": "monthly",
        "description": "Gym membership"
    })
}

pub(super) async fn call(
    app: &TestApp,
    application: &Application,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let bytes = body
        .map(|b| serde_json::to_vec(b).unwrap())
        .unwrap_or_default();
    app.signed(
        method,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

pub(super) async fn create(app: &TestApp, application: &Application, body: &Value) -> Value {
    let created = call(
        app,
        application,
        Method::POST,
        "/v1/service/mandates",
        Some(body),
    )
    .await;
    json(created, 200).await["data"].clone()
}

pub(super) async fn read(app: &TestApp, application: &Application, id: &str) -> Value {
    let path = format!("/v1/service/mandates/{id}");
    json(call(app, application, Method::GET, &path, None).await, 200).await["data"].clone()
}

pub(super) async fn put(
    app: &TestApp,
    application: &Application,
    id: &str,
    body: &Value,
) -> Response {
    let path = format!("/v1/service/mandates/{id}");
    call(app, application, Method::PUT, &path, Some(body)).await
}

pub(super) async fn sandbox(
    app: &TestApp,
    application: &Application,
    id: &str,
    action: &str,
) -> Response {
    let path = format!("/v1/sandbox/mandates/{id}/{action}");
    call(app, application, Method::POST, &path, Some(&json!({}))).await
}

pub(super) async fn merchant_app(app: &TestApp, receiver: &Receiver) -> Application {
    let merchant = app.register_merchant().await;
    app.application_calling(&merchant, &receiver.url).await
}

/// The mandate's `mandate.signed` events, oldest first (deliveries may arrive in any order;
/// event ids are time-ordered).
fn signed_events(received: &[Received], mandate: &str) -> Vec<Received> {
    let mut events: Vec<Received> = received
        .iter()
        .filter(|r| r.event_type() == "mandate.signed" && r.json()["data"]["id"] == mandate)
        .cloned()
        .collect();
    events.sort_by_key(|event| event.json()["id"].as_str().unwrap_or_default().to_owned());
    events
}

async fn a_phone_recipient_authorises_with_a_passkey_and_the_merchant_hears_it(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;

    let created = create(&app, &application, &mandate_body(&user.phone)).await;
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("md_"), "{created}");
    assert_eq!(created["status"], "pending_authorization");
    assert_eq!(created["recipient"], user.phone.as_str());
    assert_eq!(created["type"], "direct_debit");
    assert_eq!(created["amount"], 49.9);
    assert_eq!(created["currency"], "EUR");
    assert_eq!(created["frequency"], "monthly");
    assert_eq!(created["description"], "Gym membership");
    assert_eq!(created["callbackUrl"], receiver.url.as_str());
    assert!(created["createdAt"].as_str().is_some());
    assert!(created["authorizationExpiresAt"].as_str().is_some());
    assert!(
        created.get("approvalUrl").is_none(),
        "phones decide in the app"
    );

    // What the app shows, and the challenge commits to it.
    let begun = user.begun(&app, "mandate", Some(&id)).await;
    let context = &begun["context"];
    assert_eq!(context["type"], "mandate");
    assert_eq!(context["mandateId"], id.as_str());
    assert_eq!(context["mandateType"], "direct_debit");
    assert_eq!(context["application"], "Checkout");
    assert!(context["merchant"].as_str().is_some());
    assert_eq!(
        context["terms"],
        json!({"amount": 49.9, "currency": "EUR", "frequency": "monthly"})
    );
    assert_eq!(context["description"], "Gym membership");
    assert!(context.get("previousTerms").is_none());

    // Another enrolled user cannot even see it.
    let other = AppUser::enrolled(&app).await;
    error(
        other.begin(&app, "mandate", Some(&id)).await,
        404,
        "not_found",
    )
    .await;

    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "active");
    assert_eq!(done["data"]["purpose"]["type"], "mandate");
    let signed = receiver
        .wait_for(|received| signed_events(received, &id).into_iter().next())
        .await;
    assert!(signed.verifies_with(&application.webhook_secret));
    let data = &signed.json()["data"];
    assert_eq!(data["status"], "active");
    assert_eq!(data["amount"], 49.9);
    assert!(data["authorizedAt"].as_str().is_some());
    let success = receiver
        .wait_for(|received| {
            received
                .iter()
                .find(|r| {
                    r.event_type() == "auth.success" && r.json()["data"]["purpose"]["id"] == id
                })
                .cloned()
        })
        .await;
    assert_eq!(success.json()["data"]["deviceId"], user.device_id.as_str());
    let stored = read(&app, &application, &id).await;
    assert_eq!(stored["status"], "active");
    assert_eq!(stored["authorizationExpiresAt"], Value::Null);

    // Decided: nothing more to approve; a replayed assertion is refused.
    error(
        user.begin(&app, "mandate", Some(&id)).await,
        409,
        "conflict",
    )
    .await;
    error(
        user.complete(&app, &begun, &credential, "approve").await,
        401,
        "unauthorized",
    )
    .await;

    // A decline cancels.
    let second = create(&app, &application, &mandate_body(&user.phone)).await;
    let second = second["id"].as_str().unwrap().to_owned();
    let begun = user.begun(&app, "mandate", Some(&second)).await;
    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "reject").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "cancelled");
    let stored = read(&app, &application, &second).await;
    assert_eq!(stored["status"], "cancelled");
    assert!(stored["cancelledAt"].as_str().is_some());
    assert!(signed_events(&receiver.received(), &second).is_empty());
    app.stop().await;
}

async fn new_terms_need_re_authorisation_and_a_stale_challenge_signs_nothing(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;
    let id = create(&app, &application, &mandate_body(&user.phone)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // A challenge is issued, then the merchant changes the description: the assertion for what
    // the user saw no longer decides anything.
    let begun = user.begun(&app, "mandate", Some(&id)).await;
    let changed = json(
        put(
            &app,
            &application,
            &id,
            &json!({"description": "Gym membership, family"}),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(changed["data"]["status"], "pending_authorization");
    let credential = user.sign(&begun);
    error(
        user.complete(&app, &begun, &credential, "approve").await,
        409,
        "conflict",
    )
    .await;
    assert_eq!(
        read(&app, &application, &id).await["status"],
        "pending_authorization"
    );
    let begun = user.begun(&app, "mandate", Some(&id)).await;
    assert_eq!(begun["context"]["description"], "Gym membership, family");
    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "active");

    // The description of an active mandate changes without re-authorisation.
    let renamed = json(
        put(&app, &application, &id, &json!({"description": "Gym"})).await,
        200,
    )
    .await;
    assert_eq!(renamed["data"]["status"], "active");

    // New terms: back to pending, the app shows old → new.
    let raised = json(
        put(
            &app,
            &application,
            &id,
            &json!({"amount": 75, "frequency": "weekly"}),
        )
        .await,
        200,
    )
    .await["data"]
        .clone();
    assert_eq!(raised["status"], "pending_authorization");
    assert_eq!(raised["amount"], 75.0);
    assert_eq!(
        raised["authorizedTerms"],
        json!({"amount": 49.9, "currency": "EUR", "frequency": "monthly"})
    );
    let begun = user.begun(&app, "mandate", Some(&id)).await;
    assert_eq!(
        begun["context"]["previousTerms"],
        json!({"amount": 49.9, "currency": "EUR", "frequency": "monthly"})
    );
    assert_eq!(
        begun["context"]["terms"],
        json!({"amount": 75.0, "currency": "EUR", "frequency": "weekly"})
    );
    let credential = user.sign(&begun);
    let done = json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    assert_eq!(done["data"]["status"], "active");
    let events = receiver
        .wait_for(|received| {
            let events = signed_events(received, &id);
            (events.len() == 2).then_some(events)
        })
        .await;
    assert_eq!(events[1].json()["data"]["amount"], 75.0);
    assert_eq!(events[1].json()["data"]["frequency"], "weekly");

    // Removing the maximum is a change of terms too; cancelling ends it, and PUT is then 409.
    let removed = json(
        put(&app, &application, &id, &json!({"amount": null})).await,
        200,
    )
    .await;
    assert_eq!(removed["data"]["amount"], Value::Null);
    assert_eq!(removed["data"]["status"], "pending_authorization");
    let path = format!("/v1/service/mandates/{id}");
    for _ in 0..2 {
        let cancelled = json(
            call(&app, &application, Method::DELETE, &path, None).await,
            200,
        )
        .await;
        assert_eq!(cancelled["data"]["status"], "cancelled");
    }
    error(
        put(&app, &application, &id, &json!({"description": "x"})).await,
        409,
        "conflict",
    )
    .await;
    error(
        user.begin(&app, "mandate", Some(&id)).await,
        409,
        "conflict",
    )
    .await;
    assert_eq!(read(&app, &application, &id).await["status"], "cancelled");
    app.stop().await;
}

async fn mandates_are_listed_filtered_paged_and_private(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let recipient = phone();
    let mut ids = Vec::new();
    for kind in ["direct_debit", "standing_order", "authorization"] {
        let mut body = mandate_body(&recipient);
        body["type"] = json!(kind);
        ids.push(
            create(&app, &application, &body).await["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
        // Newest first is by creation time, ties by id: two creates in one millisecond would
        // list in their ids' (random) order, not the order this test expects.
        app.advance(Duration::from_millis(2));
    }
    json(sandbox(&app, &application, &ids[1], "approve").await, 200).await;
    let path = format!("/v1/service/mandates/{}", ids[2]);
    json(
        call(&app, &application, Method::DELETE, &path, None).await,
        200,
    )
    .await;

    let list = |query: &'static str| {
        let app = &app;
        let application = &application;
        async move {
            let path = format!("/v1/service/mandates{query}");
            json(call(app, application, Method::GET, &path, None).await, 200).await["data"].clone()
        }
    };
    let ids_of = |data: &Value| -> Vec<String> {
        data["mandates"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = list("").await;
    assert_eq!(
        ids_of(&all),
        vec![ids[2].clone(), ids[1].clone(), ids[0].clone()]
    );
    assert_eq!(
        all["pagination"],
        json!({"page": 1, "limit": 20, "total": 3})
    );
    assert_eq!(ids_of(&list("?status=pending").await), vec![ids[0].clone()]);
    assert_eq!(ids_of(&list("?status=active").await), vec![ids[1].clone()]);
    assert_eq!(
        ids_of(&list("?status=cancelled").await),
        vec![ids[2].clone()]
    );
    assert!(ids_of(&list("?status=expired").await).is_empty());
    assert_eq!(
        ids_of(&list("?type=standing_order").await),
        vec![ids[1].clone()]
    );
    let second = list("?limit=2&page=2").await;
    assert_eq!(ids_of(&second), vec![ids[0].clone()]);
    assert_eq!(
        second["pagination"],
        json!({"page": 2, "limit": 2, "total": 3})
    );
    for query in ["?limit=101", "?limit=0", "?status=open", "?type=cheque"] {
        let path = format!("/v1/service/mandates{query}");
        error(
            call(&app, &application, Method::GET, &path, None).await,
            422,
            "validation_error",
        )
        .await;
    }

    // Another application sees none of them and can touch none of them.
    let other = merchant_app(&app, &receiver).await;
    let theirs = |path: String, method: Method, body: Option<Value>| {
        let app = &app;
        let other = &other;
        async move { call(app, other, method, &path, body.as_ref()).await }
    };
    for id in &ids {
        let path = format!("/v1/service/mandates/{id}");
        error(
            theirs(path.clone(), Method::GET, None).await,
            404,
            "not_found",
        )
        .await;
        error(
            theirs(
                path.clone(),
                Method::PUT,
                Some(json!({"description": "mine now"})),
            )
            .await,
            404,
            "not_found",
        )
        .await;
        error(theirs(path, Method::DELETE, None).await, 404, "not_found").await;
        error(
            theirs(
                format!("/v1/sandbox/mandates/{id}/approve"),
                Method::POST,
                Some(json!({})),
            )
            .await,
            404,
            "not_found",
        )
        .await;
    }
    let path = "/v1/service/mandates".to_owned();
    let theirs_listed = json(theirs(path, Method::GET, None).await, 200).await;
    assert_eq!(theirs_listed["data"]["pagination"]["total"], 0);
    // Unchanged by all that.
    assert_eq!(
        read(&app, &application, &ids[0]).await["description"],
        "Gym membership"
    );
    assert_eq!(
        read(&app, &application, &ids[0]).await["status"],
        "pending_authorization"
    );
    app.stop().await;
}

async fn unauthorised_mandates_expire_after_seven_days(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let mut user = AppUser::enrolled(&app).await;
    let id = create(&app, &application, &mandate_body(&user.phone)).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let begun = user.begun(&app, "mandate", Some(&id)).await;
    app.advance(Duration::from_secs(7 * 24 * 3600 + 1));
    // Read as expired at once; the sweeper stores it on its next round.
    assert_eq!(read(&app, &application, &id).await["status"], "expired");
    let listed = json(
        call(
            &app,
            &application,
            Method::GET,
            "/v1/service/mandates?status=expired",
            None,
        )
        .await,
        200,
    )
    .await;
    assert_eq!(listed["data"]["mandates"][0]["id"], id.as_str());
    error(
        sandbox(&app, &application, &id, "approve").await,
        409,
        "conflict",
    )
    .await;
    // The challenge issued before lapsed too (2 minutes), and nothing can be approved.
    let credential = user.sign(&begun);
    let late = user.complete(&app, &begun, &credential, "approve").await;
    assert!(matches!(late.status().as_u16(), 401 | 409));
    error(
        user.begin(&app, "mandate", Some(&id)).await,
        409,
        "conflict",
    )
    .await;
    let path = format!("/v1/service/mandates/{id}");
    error(
        call(&app, &application, Method::DELETE, &path, None).await,
        409,
        "conflict",
    )
    .await;
    assert!(signed_events(&receiver.received(), &id).is_empty());
    app.stop().await;
}

async fn concurrent_decisions_decide_once(app: TestApp) {
    let receiver = Receiver::start().await;
    let application = merchant_app(&app, &receiver).await;
    let id = create(&app, &application, &mandate_body(&phone())).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let attempts = (0..10).map(|n| {
        let action = if n % 2 == 0 { "approve" } else { "reject" };
        let app = &app;
        let application = &application;
        let id = &id;
        async move {
            sandbox(app, application, id, action)
                .await
                .status()
                .as_u16()
        }
    });
    let statuses = join_all(attempts).await;
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 409),
        "{statuses:?}"
    );
    let status = read(&app, &application, &id).await["status"].clone();
    if status == "active" {
        receiver
            .wait_for(|received| (signed_events(received, &id).len() == 1).then_some(()))
            .await;
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let expected = usize::from(status == "active");
    assert_eq!(signed_events(&receiver.received(), &id).len(), expected);
    app.stop().await;
}
