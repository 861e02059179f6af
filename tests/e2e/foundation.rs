//! The HTTP shell: health, readiness, metrics, the API document, the error envelope for every
//! kind of bad request, and the dev mailbox.

use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::Method;
use serde_json::{Value, json};

on_both_backends!(
    health_and_readiness_report_the_backend,
    every_response_carries_a_request_id,
    metrics_count_requests_per_route,
    the_api_document_lists_every_route,
    unknown_routes_and_wrong_methods_get_the_envelope,
    bad_bodies_get_the_right_4xx,
    operator_routes_need_the_operator_token,
    a_test_message_reaches_the_dev_mailbox,
    garbage_to_any_route_is_never_a_5xx,
    contract_rules_hold_wherever_the_problem_is,
);

async fn health_and_readiness_report_the_backend(app: TestApp) {
    let health = json(app.get("/healthz").await, 200).await;
    assert_eq!(health["error"], false);
    assert_eq!(health["data"]["status"], "ok");

    let ready = json(app.get("/readyz").await, 200).await;
    let backend = match app.backend {
        idconsent_e2e::Backend::Sqlite => "sqlite",
        idconsent_e2e::Backend::Postgres => "postgres",
    };
    assert_eq!(ready["data"]["database"], backend);
    assert_eq!(ready["data"]["databaseStatus"], "ok");
    assert_eq!(ready["data"]["status"], "ready");
    assert_eq!(ready["data"]["notifications"]["sms"], "dev-mailbox");
    assert_eq!(ready["data"]["notifications"]["email"], "dev-mailbox");
}

async fn every_response_carries_a_request_id(app: TestApp) {
    let generated = app.get("/healthz").await;
    let id = generated.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req_"), "{id}");

    let echoed = app
        .client
        .get(app.url("/nowhere"))
        .header("x-request-id", "client-trace-42")
        .send()
        .await
        .unwrap();
    assert_eq!(echoed.headers()["x-request-id"], "client-trace-42");

    let unsafe_id = app
        .client
        .get(app.url("/healthz"))
        .header("x-request-id", "<script>")
        .send()
        .await
        .unwrap();
    assert_ne!(unsafe_id.headers()["x-request-id"], "<script>");
}

async fn metrics_count_requests_per_route(app: TestApp) {
    for _ in 0..3 {
        app.get("/healthz").await;
    }
    app.get("/no/such/route").await;
    let response = app.get("/metrics").await;
    assert_eq!(response.status(), 200);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    let text = response.text().await.unwrap();
    assert!(
        text.contains(
            r#"idconsent_http_requests_total{method="GET",route="/healthz",status="200"} 3"#
        ),
        "{text}"
    );
    assert!(text.contains(r#"route="unmatched",status="404""#), "{text}");
    assert!(
        text.contains("idconsent_http_request_duration_seconds_bucket"),
        "{text}"
    );
}

async fn the_api_document_lists_every_route(app: TestApp) {
    let document = json(app.get("/openapi.json").await, 200).await;
    assert_eq!(document["openapi"], "3.1.0");
    for path in [
        "/healthz",
        "/readyz",
        "/metrics",
        "/openapi.json",
        "/docs",
        "/v1/dev/messages",
        "/v1/admin/notifications/test",
    ] {
        assert!(
            document["paths"].get(path).is_some(),
            "{path} missing from the document"
        );
    }
    assert!(document["components"]["schemas"].get("ErrorBody").is_some());

    let docs = app.get("/docs").await;
    assert_eq!(docs.status(), 200);
    assert!(
        docs.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html")
    );
    let html = docs.text().await.unwrap();
    assert!(html.contains("<code>/v1/admin/notifications/test</code>"));
    assert!(html.contains("id=\"schema-ErrorBody\""));
}

async fn unknown_routes_and_wrong_methods_get_the_envelope(app: TestApp) {
    let body = error(app.get("/v1/nothing-here").await, 404, "not_found").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("/v1/nothing-here")
    );

    let wrong_method = app
        .request(Method::DELETE, "/healthz")
        .await
        .send()
        .await
        .unwrap();
    assert_eq!(wrong_method.headers()["allow"], "GET");
    error(wrong_method, 405, "method_not_allowed").await;

    let get_on_post_route = app.get("/v1/admin/notifications/test").await;
    assert_eq!(get_on_post_route.headers()["allow"], "POST");
    error(get_on_post_route, 405, "method_not_allowed").await;
}

async fn bad_bodies_get_the_right_4xx(app: TestApp) {
    let path = "/v1/admin/notifications/test";
    let send = |content_type: &'static str, body: Vec<u8>| {
        app.client
            .post(app.url(path))
            .bearer_auth(app.admin_token())
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let truncated = send("application/json", br#"{"to": "+1555"#.to_vec())
        .await
        .unwrap();
    let body = error(truncated, 400, "bad_request").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .starts_with("Malformed JSON")
    );

    let wrong_type = send("application/json", br#"{"to": 15551234567}"#.to_vec())
        .await
        .unwrap();
    let body = error(wrong_type, 400, "bad_request").await;
    assert_eq!(body["details"][0]["field"], "to");

    let missing = send("application/json", br#"{"text": "hi"}"#.to_vec())
        .await
        .unwrap();
    let body = error(missing, 400, "bad_request").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("missing field `to`")
    );

    let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
    error(
        send("application/json", deep.into_bytes()).await.unwrap(),
        400,
        "bad_request",
    )
    .await;

    let not_json = send("text/plain", br#"{"to": "+15551234567"}"#.to_vec())
        .await
        .unwrap();
    error(not_json, 415, "unsupported_media_type").await;

    let huge = vec![b' '; 2 << 20];
    error(
        send("application/json", huge).await.unwrap(),
        413,
        "payload_too_large",
    )
    .await;

    let invalid = send(
        "application/json",
        br#"{"to": "555-1234", "text": ""}"#.to_vec(),
    )
    .await
    .unwrap();
    let body = error(invalid, 422, "validation_error").await;
    let fields: Vec<&str> = body["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["to", "text"]);
}

async fn operator_routes_need_the_operator_token(app: TestApp) {
    let path = "/v1/admin/notifications/test";
    let body = json!({"to": "+15551234567"});
    let anonymous = app.post_json(path, &body).await;
    error(anonymous, 401, "unauthorized").await;
    let wrong = app
        .client
        .post(app.url(path))
        .bearer_auth("not-the-token")
        .json(&body)
        .send()
        .await
        .unwrap();
    error(wrong, 401, "unauthorized").await;
}

async fn a_test_message_reaches_the_dev_mailbox(app: TestApp) {
    let queued = app
        .client
        .post(app.url("/v1/admin/notifications/test"))
        .bearer_auth(app.admin_token())
        .json(&json!({"to": "ops@merchant.example", "text": "Hello from the test"}))
        .send()
        .await
        .unwrap();
    let queued = json(queued, 202).await;
    assert_eq!(queued["data"]["channel"], "email");
    let message_id = queued["data"]["messageId"].as_str().unwrap().to_owned();

    let delivered = eventually(|| async {
        let mailbox = json(
            app.get("/v1/dev/messages?to=ops@merchant.example").await,
            200,
        )
        .await;
        let message = mailbox["data"]["messages"][0].clone();
        (message["status"] == "delivered").then_some(message)
    })
    .await;
    assert_eq!(delivered["id"], message_id.as_str());
    assert_eq!(delivered["body"], "Hello from the test");
    assert_eq!(delivered["channel"], "email");
    assert!(delivered["createdAt"].as_str().unwrap().ends_with('Z'));

    let empty = json(app.get("/v1/dev/messages?to=%2B15550000000").await, 200).await;
    assert_eq!(empty["data"]["messages"], json!([]));
    error(app.get("/v1/dev/messages").await, 400, "bad_request").await;
    error(
        app.get("/v1/dev/messages?to=nobody").await,
        422,
        "validation_error",
    )
    .await;
}

/// Every documented route, every method, with garbage: the answer is a 4xx envelope (or a
/// success for routes that ignore bodies), never a 5xx. The OpenID Connect endpoints answer in
/// the RFCs' words instead (CONTRACT §10): JSON `error` and `error_description`, or the
/// authorization endpoint's HTML error page for an unknown client (never a redirect).
async fn garbage_to_any_route_is_never_a_5xx(app: TestApp) {
    let document = json(app.get("/openapi.json").await, 200).await;
    let paths: Vec<String> = document["paths"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let bodies: Vec<(&str, Vec<u8>)> = vec![
        ("application/json", br#"{"truncated": "#.to_vec()),
        (
            "application/json",
            br#"{"to": [1, 2, {"x": null}], "amount": "NaN"}"#.to_vec(),
        ),
        ("application/json", b"[]".to_vec()),
        ("application/json", vec![b'7'; 2 << 20]),
        ("application/x-www-form-urlencoded", b"a=b".to_vec()),
        ("application/json", vec![0xff, 0xfe, 0x00]),
    ];
    for path in &paths {
        let concrete = fill_path_parameters(path);
        for method in [
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ] {
            for (content_type, body) in &bodies {
                let response = app
                    .client
                    .request(method.clone(), app.url(&concrete))
                    .header("content-type", *content_type)
                    .bearer_auth("garbage-token")
                    .body(body.clone())
                    .send()
                    .await
                    .unwrap();
                let status = response.status().as_u16();
                assert!(status < 500, "{method} {concrete} answered {status}");
                if status >= 400 && concrete.starts_with("/oauth2/") {
                    let html = response
                        .headers()
                        .get("content-type")
                        .is_some_and(|value| value.to_str().unwrap_or("").starts_with("text/html"));
                    if html {
                        assert!(concrete == "/oauth2/authorize", "{method} {concrete}");
                        assert!(response.headers().get("location").is_none());
                        continue;
                    }
                    // The RFCs' JSON from the endpoint; the envelope where the request never
                    // reached it (a method it does not serve, 405; a body over the size
                    // limit, 413).
                    let answer: Value = response.json().await.unwrap();
                    assert!(
                        answer["error"].is_string()
                            || (matches!(status, 405 | 413) && answer["error"] == true),
                        "{method} {concrete}: {answer}"
                    );
                } else if status >= 400 {
                    let envelope: Value = response.json().await.unwrap();
                    assert_eq!(envelope["error"], true, "{method} {concrete}: {envelope}");
                    assert_eq!(envelope["code"], status);
                }
            }
        }
    }
}

fn fill_path_parameters(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            if segment.starts_with('{') {
                "garbage%20id"
            } else {
                segment
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Polls `check` until it yields a value (at most 10 s): for effects of background workers.
pub async fn eventually<T, F, Fut>(mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        if let Some(value) = check().await {
            return value;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "condition not met within 10 s"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

mod production {
    use super::*;
    use idconsent_e2e::Backend;
    use idconsent_server::Mode;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dev_routes_do_not_exist_and_unconfigured_channels_are_named() {
        // Nothing but the master key and the operator token (which the test config sets):
        // OAuth signing keys are created in the database on first start.
        let app = TestApp::start_with(Backend::Sqlite, |config| {
            config.mode = Mode::Production;
        })
        .await
        .unwrap();
        error(
            app.get("/v1/dev/messages?to=%2B15551234567").await,
            404,
            "not_found",
        )
        .await;
        let document = json(app.get("/openapi.json").await, 200).await;
        assert!(document["paths"].get("/v1/dev/messages").is_none());

        let ready = json(app.get("/readyz").await, 200).await;
        assert_eq!(ready["data"]["status"], "degraded");
        assert_eq!(ready["data"]["notifications"]["sms"], "missing");
        assert_eq!(ready["data"]["notifications"]["email"], "missing");

        let queued = app
            .client
            .post(app.url("/v1/admin/notifications/test"))
            .bearer_auth(app.admin_token())
            .json(&json!({"to": "+15551234567"}))
            .send()
            .await
            .unwrap();
        json(queued, 202).await;
        app.stop().await;
    }
}

/// CONTRACT §1, found through the real binary: deep nesting is malformed even in a field the
/// endpoint ignores (JSON and signed routes), a missing required field is 400, and a
/// well-formed number out of range is 422 — and none of them changes anything.
async fn contract_rules_hold_wherever_the_problem_is(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let nested = |levels: usize| format!("{}{}", "[".repeat(levels), "]".repeat(levels));

    // A JSON route: registration with a deep, ignored extra field.
    let mut registration = app.registration();
    let with_deep = |body: &Value, levels: usize| {
        let text = serde_json::to_string(body).unwrap();
        format!(
            "{},\"ignored\":{}}}",
            &text[..text.len() - 1],
            nested(levels)
        )
    };
    let refused = app
        .client
        .post(app.url("/v1/merchants/register"))
        .header("content-type", "application/json")
        .body(with_deep(&registration, 200))
        .send()
        .await
        .unwrap();
    error(refused, 400, "bad_request").await;
    registration["email"] = json!(format!("fresh-{}", registration["email"].as_str().unwrap()));
    let accepted = app
        .client
        .post(app.url("/v1/merchants/register"))
        .header("content-type", "application/json")
        .body(with_deep(&registration, 100))
        .send()
        .await
        .unwrap();
    json(accepted, 201).await;

    // A signed route: consent creation with the same trick; no session is created.
    let consent = json!({
        "clientId": application.client_id,
        "recipient": "+15550001234",
        "intent": "TRANSACTION",
        "callbackUrl": "http://127.0.0.1:9/hooks",
        "transaction": {"type": "payment", "description": "Order", "amount": 1,
                        "currency": "EUR", "payee": "Shop"}
    });
    let refused = app
        .signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            with_deep(&consent, 200).as_bytes(),
        )
        .send()
        .await
        .unwrap();
    error(refused, 400, "bad_request").await;
    let deliveries = json(
        app.signed(
            Method::GET,
            "/v1/webhooks/deliveries",
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
    assert_eq!(deliveries["data"]["pagination"]["total"], 0);

    // A missing required field, and null for one: 400.
    for body in [
        json!({"callbackUrl": "https://shop.example/hooks"}),
        json!({"name": null, "callbackUrl": "https://shop.example/hooks"}),
    ] {
        let refused = app
            .as_merchant(Method::POST, "/v1/merchants/applications", &merchant.token)
            .json(&body)
            .send()
            .await
            .unwrap();
        error(refused, 400, "bad_request").await;
    }

    // A well-formed number out of range: 422 naming the field.
    let refused = app
        .as_merchant(Method::POST, "/v1/merchants/documents", &merchant.token)
        .json(
            &json!({"type": "business_registration", "fileName": "r.pdf",
                      "mimeType": "application/pdf", "size": -1, "contentBase64": "JVBERg=="}),
        )
        .send()
        .await
        .unwrap();
    let refused = error(refused, 422, "validation_error").await;
    assert_eq!(refused["details"][0]["field"], "size");
}
