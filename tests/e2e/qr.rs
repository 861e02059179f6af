//! QR code operations (issue 14): generate, status, the image with format negotiation and
//! caching, expiry, and what another application may see — on both backends.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{TestApp, error, json, on_both_backends};
use reqwest::{Method, Response};
use serde_json::{Value, json};

on_both_backends!(
    a_code_is_generated_read_and_served_until_it_expires,
    the_image_format_follows_the_query_then_accept_then_the_code,
    bad_requests_and_other_applications_are_refused,
);

async fn generate(app: &TestApp, application: &Application, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(
        Method::POST,
        "/v1/qr/generate",
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

async fn status(app: &TestApp, application: &Application, id: &str) -> Response {
    app.signed(
        Method::GET,
        &format!("/v1/qr/{id}"),
        &application.sandbox_key,
        &application.secret,
        b"",
    )
    .send()
    .await
    .unwrap()
}

/// The text a PNG QR code decodes to.
fn decode_png(bytes: &[u8]) -> String {
    let image = image::load_from_memory(bytes).unwrap().to_luma8();
    let mut prepared = rqrr::PreparedImage::prepare(image);
    let grids = prepared.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code in the image");
    grids[0].decode().unwrap().1
}

async fn image(app: &TestApp, id: &str, query: &str, accept: Option<&str>) -> Response {
    let mut request = app
        .client
        .get(app.url(&format!("/v1/qr/{id}/image{query}")));
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    request.send().await.unwrap()
}

async fn a_code_is_generated_read_and_served_until_it_expires(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let data = "https://shop.example/pay?order=42&amount=19.99&note=caf\u{e9}";
    let created = generate(
        &app,
        &application,
        &json!({"data": data, "size": 300, "errorCorrection": "H", "expiresIn": 120}),
    )
    .await;
    let created = json(created, 201).await["data"].clone();
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("qr_") && id.len() >= 3 + 26, "{id}");
    assert_eq!(created["status"], "active");
    assert_eq!(created["format"], "png");
    assert_eq!(created["size"], 300);
    assert_eq!(created["errorCorrection"], "H");
    assert!(
        created["imageUrl"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/v1/qr/{id}/image"))
    );
    let png = BASE64.decode(created["image"].as_str().unwrap()).unwrap();
    assert_eq!(decode_png(&png), data);

    let read = json(status(&app, &application, id).await, 200).await["data"].clone();
    assert_eq!(read["status"], "active");
    assert_eq!(read["data"], data);
    assert_eq!(read["expiresAt"], created["expiresAt"]);

    // The image, without authentication, cacheable until the code expires.
    let served = image(&app, id, "", None).await;
    assert_eq!(served.status(), 200);
    assert_eq!(served.headers()["content-type"], "image/png");
    assert_eq!(served.headers()["vary"], "Accept");
    let cache = served.headers()["cache-control"]
        .to_str()
        .unwrap()
        .to_owned();
    let max_age: u64 = cache
        .strip_prefix("public, max-age=")
        .unwrap()
        .parse()
        .unwrap();
    assert!((115..=120).contains(&max_age), "{cache}");
    let etag = served.headers()["etag"].to_str().unwrap().to_owned();
    assert_eq!(
        served.bytes().await.unwrap(),
        png,
        "the same bytes as at generation"
    );
    let again = app
        .client
        .get(app.url(&format!("/v1/qr/{id}/image")))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
    assert!(again.bytes().await.unwrap().is_empty());

    // Two minutes on: expired, the image is gone, the record says so.
    app.advance(Duration::from_secs(120));
    error(image(&app, id, "", None).await, 410, "gone").await;
    let read = json(status(&app, &application, id).await, 200).await;
    assert_eq!(read["data"]["status"], "expired");
}

async fn the_image_format_follows_the_query_then_accept_then_the_code(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let created = generate(
        &app,
        &application,
        &json!({"data": "hello", "format": "svg"}),
    )
    .await;
    let created = json(created, 201).await["data"].clone();
    assert!(created["image"].as_str().unwrap().starts_with("<svg"));
    let id = created["id"].as_str().unwrap();
    let content_type = |response: &Response| {
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .to_owned()
    };
    for (query, accept, expected) in [
        ("", None, "image/svg+xml"),
        ("?format=png", Some("image/svg+xml"), "image/png"),
        ("", Some("image/png"), "image/png"),
        (
            "",
            Some("image/png;q=0.4, image/svg+xml;q=0.8"),
            "image/svg+xml",
        ),
        ("", Some("image/svg+xml;q=0.1, image/png"), "image/png"),
        ("", Some("*/*"), "image/svg+xml"),
        ("", Some("image/*, image/svg+xml;q=0"), "image/png"),
        ("", Some("text/html"), "image/svg+xml"),
    ] {
        let response = image(&app, id, query, accept).await;
        assert_eq!(response.status(), 200, "{query} {accept:?}");
        assert_eq!(content_type(&response), expected, "{query} {accept:?}");
        let etag = response.headers()["etag"].to_str().unwrap().to_owned();
        let suffix = if expected == "image/png" {
            ".png\""
        } else {
            ".svg\""
        };
        assert!(etag.ends_with(suffix), "a format has its own ETag: {etag}");
        let bytes = response.bytes().await.unwrap();
        if expected == "image/png" {
            assert_eq!(decode_png(&bytes), "hello");
        } else {
            assert!(bytes.starts_with(b"<svg"));
        }
    }
    let refused = image(&app, id, "?format=gif", None).await;
    error(refused, 422, "validation_error").await;
    error(
        image(&app, "qr_doesnotexist", "", None).await,
        404,
        "not_found",
    )
    .await;
}

async fn bad_requests_and_other_applications_are_refused(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let fields = |body: Value| {
        let (app, application) = (&app, &application);
        async move {
            let refused = error(
                generate(app, application, &body).await,
                422,
                "validation_error",
            )
            .await;
            refused["details"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| d["field"].as_str().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(
        fields(json!({"data": "", "format": "gif", "size": 32, "errorCorrection": "Z", "expiresIn": 10})).await,
        ["data", "format", "size", "errorCorrection", "expiresIn"]
    );
    assert_eq!(fields(json!({"data": "x".repeat(2049)})).await, ["data"]);
    assert_eq!(
        fields(json!({"data": "x".repeat(2048), "errorCorrection": "H", "size": 2048})).await,
        ["data"],
        "2,048 bytes do not fit at level H"
    );
    assert_eq!(
        fields(json!({"data": "x".repeat(1000), "errorCorrection": "L", "size": 64})).await,
        ["size"]
    );
    // Wrong JSON types are 400, a missing field too (CONTRACT §1).
    for body in [
        json!({"data": 5}),
        json!({"data": "x", "size": "big"}),
        json!({}),
    ] {
        error(
            generate(&app, &application, &body).await,
            400,
            "bad_request",
        )
        .await;
    }

    // Another merchant's application cannot read the code (the image is public by id).
    let created = generate(&app, &application, &json!({"data": "mine"})).await;
    let id = json(created, 201).await["data"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let stranger = app.register_merchant().await;
    let other = app.application(&stranger).await;
    error(status(&app, &other, &id).await, 404, "not_found").await;
    error(
        status(&app, &application, "qr_unknown").await,
        404,
        "not_found",
    )
    .await;
}
