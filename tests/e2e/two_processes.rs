//! Two server processes on one database, each with a data directory of its own — sharing only
//! the database, `IDC_MASTER_KEY` and `IDC_ADMIN_TOKEN`, as an operator scaling out runs them
//! (docs/scaling.md): whatever one process did, the other serves (issue 31 §10, §11).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use diesel::connection::SimpleConnection;
use diesel::{Connection, PgConnection, RunQueryDsl};
use idconsent_e2e::pdf::pdf;
use idconsent_e2e::receiver::Receiver;
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

/// Every delivery of `application`, once none is pending, read through the server at `base`.
async fn settled_deliveries_at(
    app: &TestApp,
    base: &str,
    application: &Application,
    count: usize,
) -> Vec<Value> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let listed = signed_to(
            app,
            base,
            application,
            Method::GET,
            "/v1/webhooks/deliveries?limit=100",
            &Value::Null,
        )
        .await;
        let listed = json(listed, 200).await;
        let deliveries = listed["data"]["deliveries"].as_array().unwrap().clone();
        if deliveries.len() == count && deliveries.iter().all(|d| d["status"] != "pending") {
            return deliveries;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "deliveries not settled: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The backends waiting for a lock `holder` holds.
fn blocked_by(conn: &mut PgConnection, holder: i32) -> Vec<i32> {
    #[derive(diesel::QueryableByName)]
    struct Waiting {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    diesel::sql_query(format!(
        "SELECT pid FROM pg_stat_activity WHERE {holder} = ANY (pg_blocking_pids(pid))"
    ))
    .load::<Waiting>(conn)
    .unwrap()
    .into_iter()
    .map(|waiting| waiting.pid)
    .collect()
}

/// Holds the applications table from another connection until a read of it has waited into
/// its statement timeout (only the second process has a short one), then lets go.
fn fail_a_secret_read(url: &str) {
    let mut holder = PgConnection::establish(url).unwrap();
    let mut observer = PgConnection::establish(url).unwrap();
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    let holder_pid = diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result::<Pid>(&mut holder)
        .unwrap()
        .pid;
    holder
        .batch_execute("BEGIN; LOCK TABLE applications IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    // While the lock is held, a backend that stops waiting for it has given up: its statement
    // timed out.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut seen_waiting = Vec::new();
    loop {
        let waiting = blocked_by(&mut observer, holder_pid);
        if seen_waiting.iter().any(|pid| !waiting.contains(pid)) {
            break;
        }
        seen_waiting.extend(waiting);
        assert!(
            std::time::Instant::now() < deadline,
            "no read of the secrets timed out"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    holder.batch_execute("COMMIT").unwrap();
}

/// Retries every 200 ms for 12 s: the deliveries are still waiting for a retry whenever the
/// lock below is taken, however loaded the machine.
fn short_retries(config: &mut Config) {
    config.webhooks.retry =
        idconsent_webhook::RetrySchedule::parse(&["200ms"; 60].join(",")).unwrap();
}

fn short_statements_and_retries(config: &mut Config) {
    short_retries(config);
    config.db.statement_timeout = Duration::from_millis(400);
}

/// Consents created through both processes; their webhooks answered 500 until, while the
/// deliveries wait for a retry, a process's read of the signing secrets fails (the applications
/// table locked past its statement timeout). The first process stops before the lock, so that
/// the rounds — and the read that fails — are the second's, whose statements time out quickly. A failed read is a retry of the round,
/// not an attempt: every attempt in the delivery log is a request the endpoint received.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_secret_read_is_no_attempt() {
    let Some(mut app) = TestApp::start_with(Backend::Postgres, short_retries).await else {
        return;
    };
    let second = app
        .stateless_second_server_with(short_statements_and_retries)
        .await;
    const EVENTS: usize = 6;
    let receiver = Receiver::start().await;
    receiver.answer(500);
    let merchant = app.register_merchant().await;
    let application = app.application_calling(&merchant, &receiver.url).await;
    for n in 0..EVENTS {
        let base = if n % 2 == 0 {
            app.base.clone()
        } else {
            second.url()
        };
        let created = signed_to(
            &app,
            &base,
            &application,
            Method::POST,
            "/v1/consents/auth",
            &json!({
                "clientId": application.client_id,
                "callbackUrl": receiver.url,
                "recipient": format!("+1555{}", &unique()[..7]),
                "intent": "LOGIN",
                "transaction": {"type": "login", "description": "Sign in", "amount": 0,
                                "currency": "USD", "payee": "Shop"}
            }),
        )
        .await;
        json(created, 201).await;
    }
    receiver
        .wait_for(|received| (received.len() >= EVENTS).then_some(()))
        .await;
    // From here on only the second process runs rounds.
    app.stop_server().await;
    let url = app.database_url().to_owned();
    tokio::task::spawn_blocking(move || fail_a_secret_read(&url))
        .await
        .unwrap();
    receiver.answer(200);
    let deliveries = settled_deliveries_at(&app, &second.url(), &application, EVENTS).await;
    let unposted: Vec<&Value> = deliveries
        .iter()
        .flat_map(|d| d["attempts"].as_array().unwrap())
        .filter(|attempt| attempt["statusCode"].is_null())
        .collect();
    assert!(
        unposted.is_empty(),
        "attempts that sent nothing: {unposted:?}"
    );
    assert!(
        deliveries.iter().all(|d| d["status"] == "succeeded"),
        "{deliveries:?}"
    );
    let attempts: usize = deliveries
        .iter()
        .map(|d| d["attempts"].as_array().unwrap().len())
        .sum();
    assert_eq!(attempts, receiver.received().len(), "{deliveries:?}");
    second.stop().await;
    app.stop().await;
}
