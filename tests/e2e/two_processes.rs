//! Two server processes on one database, each with a data directory of its own — sharing only
//! the database, `IDC_MASTER_KEY` and `IDC_ADMIN_TOKEN`, as an operator scaling out runs them
//! (docs/scaling.md): whatever one process did, the other serves (issue 31 §10).

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::pdf::pdf;
use idconsent_e2e::scenario::{Application, unique};
use idconsent_e2e::{Backend, TestApp, error, json};
use idconsent_server::Config;
use idconsent_server::config::BlobConfig;
use reqwest::Method;
use serde_json::{Value, json};

/// A signed request to the process at `base`.
async fn signed_to(
    app: &TestApp,
    base: &str,
    application: &Application,
    method: Method,
    path: &str,
    body: &Value,
) -> reqwest::Response {
    let bytes = if body.is_null() {
        Vec::new()
    } else {
        serde_json::to_vec(body).unwrap()
    };
    app.signed_to(
        base,
        method,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
        app.signing_millis(),
    )
    .send()
    .await
    .unwrap()
}

/// The bytes of a successful response, after checking its status and type.
async fn pdf_of(response: reqwest::Response) -> Vec<u8> {
    let status = response.status().as_u16();
    let kind = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.bytes().await.unwrap().to_vec();
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&bytes));
    assert_eq!(kind.as_deref(), Some("application/pdf"));
    bytes
}

/// A signature request created through one process; its signer's hosted page, the sandbox
/// signature and the certificate through the other; the certificate again through the first.
async fn a_signature_request_is_served_by_either_process(app: TestApp, adjust: fn(&mut Config)) {
    let second = app.stateless_second_server_with(adjust).await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let document = pdf(2, "");
    let email = format!("signer-{}@example.com", unique());
    let created = signed_to(
        &app,
        &app.base,
        &application,
        Method::POST,
        "/v1/signature/documents",
        &json!({
            "document": BASE64.encode(&document),
            "signers": [{"email": email, "name": "Ann Lee"}],
        }),
    )
    .await;
    let id = json(created, 201).await["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();

    // The signer's page, served by the other process: code, then the document.
    let page = format!("{}/sign/{id}", second.url());
    let post =
        |step: &str, body: Value| app.client.post(format!("{page}{step}")).json(&body).send();
    json(post("/code", json!({"email": email})).await.unwrap(), 202).await;
    let code = app.last_message(&email).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let confirmed = json(
        post("/code/verify", json!({"email": email, "code": code}))
            .await
            .unwrap(),
        200,
    )
    .await;
    let token = confirmed["data"]["token"].as_str().unwrap().to_owned();
    let shown = pdf_of(
        post("/document", json!({"email": email, "token": token}))
            .await
            .unwrap(),
    )
    .await;
    assert!(shown == document, "the page shows the document as uploaded");

    let signed = signed_to(
        &app,
        &second.url(),
        &application,
        Method::POST,
        &format!("/v1/sandbox/signature/documents/{id}/sign"),
        &json!({"email": email}),
    )
    .await;
    assert_eq!(json(signed, 200).await["data"]["status"], "completed");
    let certificate_path = format!("/v1/signature/documents/{id}/certificate");
    let made = pdf_of(
        signed_to(
            &app,
            &second.url(),
            &application,
            Method::GET,
            &certificate_path,
            &Value::Null,
        )
        .await,
    )
    .await;
    assert!(
        made.starts_with(&document),
        "the certificate extends the upload"
    );
    let again = pdf_of(
        signed_to(
            &app,
            &app.base,
            &application,
            Method::GET,
            &certificate_path,
            &Value::Null,
        )
        .await,
    )
    .await;
    assert!(
        again == made,
        "the certificate is made once and kept for both"
    );
    second.stop().await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_request_is_served_by_either_process_on_postgres() {
    // The default: with PostgreSQL and no object store, files live in the database.
    if let Some(app) = TestApp::start(Backend::Postgres).await {
        a_signature_request_is_served_by_either_process(app, |_| {}).await;
    }
}

fn files_in_the_database(config: &mut Config) {
    config.blobs = BlobConfig::Database;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signature_request_is_served_by_either_process_on_sqlite() {
    // SQLite keeps files in the data directory unless told (IDC_BLOB_STORE=database).
    if let Some(app) = TestApp::start_with(Backend::Sqlite, files_in_the_database).await {
        a_signature_request_is_served_by_either_process(app, files_in_the_database).await;
    }
}

/// A document truly lost from the file store (deleted behind the service's back) is a clear
/// 410 `gone` for the merchant's certificate and the signer's page — never an opaque 500.
async fn a_lost_document_is_gone_not_a_server_error(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, files_in_the_database).await else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let email = format!("signer-{}@example.com", unique());
    let created = signed_to(
        &app,
        &app.base,
        &application,
        Method::POST,
        "/v1/signature/documents",
        &json!({
            "document": BASE64.encode(pdf(1, "")),
            "signers": [{"email": email, "name": "Ann Lee"}],
        }),
    )
    .await;
    let id = json(created, 201).await["data"]["signatureRequestId"]
        .as_str()
        .unwrap()
        .to_owned();
    let page = format!("/sign/{id}");
    json(
        app.post_json(&format!("{page}/code"), &json!({"email": email}))
            .await,
        202,
    )
    .await;
    let code = app.last_message(&email).await["code"]
        .as_str()
        .unwrap()
        .to_owned();
    let confirmed = json(
        app.post_json(
            &format!("{page}/code/verify"),
            &json!({"email": email, "code": code}),
        )
        .await,
        200,
    )
    .await;
    let token = confirmed["data"]["token"].as_str().unwrap().to_owned();
    app.database()
        .execute(format!(
            "DELETE FROM blob_objects WHERE key LIKE 'signatures/{id}/%'"
        ))
        .await;
    // The signer's page says so instead of showing the document…
    let shown = app
        .post_json(
            &format!("{page}/document"),
            &json!({"email": email, "token": token}),
        )
        .await;
    let body = error(shown, 410, "gone").await;
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("no longer stored"),
        "{body}"
    );
    // …and once everyone has signed, so does the certificate.
    let signed = signed_to(
        &app,
        &app.base,
        &application,
        Method::POST,
        &format!("/v1/sandbox/signature/documents/{id}/sign"),
        &json!({"email": email}),
    )
    .await;
    json(signed, 200).await;
    let certificate = signed_to(
        &app,
        &app.base,
        &application,
        Method::GET,
        &format!("/v1/signature/documents/{id}/certificate"),
        &Value::Null,
    )
    .await;
    error(certificate, 410, "gone").await;
    // The request itself is still there, with its audit trail.
    let read = signed_to(
        &app,
        &app.base,
        &application,
        Method::GET,
        &format!("/v1/signature/documents/{id}"),
        &Value::Null,
    )
    .await;
    assert_eq!(json(read, 200).await["data"]["status"], "completed");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_document_is_gone_not_a_server_error_on_sqlite() {
    a_lost_document_is_gone_not_a_server_error(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_document_is_gone_not_a_server_error_on_postgres() {
    a_lost_document_is_gone_not_a_server_error(Backend::Postgres).await;
}
