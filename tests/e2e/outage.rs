//! When the database goes away (issue 19): 503 with `Retry-After` and the error envelope,
//! `/readyz` 503, `/healthz` 200, nothing half-written, and back on its own when it returns.
//!
//! PostgreSQL is cut by a TCP proxy between the service and the server (every connection
//! dropped, new ones refused). SQLite is embedded, so "away" means it cannot take writes: the
//! test holds the file's write lock from another connection, past the service's `busy_timeout`
//! (a full disk fails the same way, as `SQLITE_FULL`). Reads of an SQLite file keep working
//! then, but every signed request writes its replay fingerprint, so signed reads are 503 too.

use std::time::Duration;

use idconsent_e2e::proxy::TcpProxy;
use idconsent_e2e::receiver::Receiver;
use idconsent_e2e::scenario::{Application, unique};
use idconsent_e2e::{Backend, TestApp, json};
use reqwest::{Method, Response};
use serde_json::{Value, json};

/// The service's settings for these tests: give up on the database quickly.
fn impatient(config: &mut idconsent_server::Config) {
    config.db.acquire_timeout = Duration::from_millis(800);
    config.db.busy_timeout = Duration::from_millis(300);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    let Some(admin_url) = idconsent_store_diesel::testing::postgres_admin_url() else {
        assert!(
            !idconsent_store_diesel::testing::postgres_required(),
            "PostgreSQL is required here"
        );
        return;
    };
    let server = host_and_port(&admin_url);
    let proxy = TcpProxy::start(server.parse().unwrap()).await;
    let through_proxy = proxy.addr.to_string();
    let app = TestApp::start_routed(
        Backend::Postgres,
        |url| url.replacen(&server, &through_proxy, 1),
        impatient,
    )
    .await
    .unwrap();
    let fixture = Fixture::prepare(&app).await;
    proxy.cut();
    fixture.during_the_outage(&app).await;
    fixture.pages_say_so(&app).await;
    proxy.restore();
    fixture.after_it(&app).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let app = TestApp::start_with(Backend::Sqlite, impatient)
        .await
        .unwrap();
    let fixture = Fixture::prepare(&app).await;
    let lock = app.hold_write_lock().await;
    fixture.during_the_outage(&app).await;
    lock.release().await;
    fixture.after_it(&app).await;
    app.stop().await;
}

/// `host:port` of a `postgres://user@host:port/db…` URL.
fn host_and_port(url: &str) -> String {
    let after_at = url.rsplit_once('@').map_or(url, |(_, rest)| rest);
    let end = after_at.find(['/', '?']).unwrap_or(after_at.len());
    after_at[..end].to_owned()
}

async fn create(app: &TestApp, application: &Application, callback: &str) -> Response {
    let body = serde_json::to_vec(&json!({
        "clientId": application.client_id,
        "callbackUrl": callback,
        "recipient": format!("+1555{}", &unique()[..7]),
        "intent": "LOGIN",
        "transaction": {"type": "login", "description": "Sign in", "amount": 0,
                        "currency": "USD", "payee": "Shop"}
    }))
    .unwrap();
    app.signed(
        Method::POST,
        "/v1/consents/auth",
        &application.sandbox_key,
        &application.secret,
        &body,
    )
    .send()
    .await
    .unwrap()
}

async fn signed_get(app: &TestApp, application: &Application, path: &str) -> Response {
    app.signed(
        Method::GET,
        path,
        &application.sandbox_key,
        &application.secret,
        b"",
    )
    .send()
    .await
    .unwrap()
}

/// Asserts the 503 of issue 19: envelope, message and `Retry-After`.
async fn unavailable(response: Response) -> Value {
    let retry_after = response
        .headers()
        .get("retry-after")
        .map(|value| value.to_str().unwrap().to_owned());
    let body = json(response, 503).await;
    assert_eq!(body["error"], true, "{body}");
    assert_eq!(body["type"], "service_unavailable", "{body}");
    assert_eq!(
        body["message"],
        "The service is temporarily unavailable; retry later"
    );
    assert_eq!(retry_after.as_deref(), Some("5"));
    body
}

/// Polls `check` every 100 ms for up to 15 s.
async fn eventually<T, F: std::future::Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within 15 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A merchant with one session created before the outage, and its webhook count.
struct Fixture {
    receiver: Receiver,
    merchant_email: String,
    application: Application,
    session: String,
    events_before: u64,
}

impl Fixture {
    async fn prepare(app: &TestApp) -> Self {
        let receiver = Receiver::start().await;
        let merchant = app.register_merchant().await;
        let application = app.application_calling(&merchant, &receiver.url).await;
        let before = json(create(app, &application, &receiver.url).await, 201).await;
        let session = before["data"]["sessionId"].as_str().unwrap().to_owned();
        let mut fixture = Self {
            receiver,
            merchant_email: merchant.email.clone(),
            application,
            session,
            events_before: 0,
        };
        fixture.events_before = fixture.deliveries(app).await;
        fixture
    }

    async fn deliveries(&self, app: &TestApp) -> u64 {
        let listed = signed_get(app, &self.application, "/v1/webhooks/deliveries").await;
        json(listed, 200).await["data"]["pagination"]["total"]
            .as_u64()
            .unwrap()
    }

    async fn during_the_outage(&self, app: &TestApp) {
        let application = &self.application;
        unavailable(create(app, application, &self.receiver.url).await).await;
        let read = format!("/v1/consents/auth/{}", self.session);
        unavailable(signed_get(app, application, &read).await).await;
        let login = app
            .post_json(
                "/v1/merchants/login",
                &json!({"email": self.merchant_email, "password": "correct horse battery staple"}),
            )
            .await;
        unavailable(login).await;
        let ready = eventually("/readyz 503", || async {
            let response = app.get("/readyz").await;
            (response.status() == 503).then_some(response)
        })
        .await;
        let ready = unavailable(ready).await;
        assert_eq!(ready["details"][0]["field"], "database", "{ready}");
        json(app.get("/healthz").await, 200).await;
        let metrics = app.get("/metrics").await.text().await.unwrap();
        assert!(metrics.contains("idconsent_database_up 0"), "{metrics}");
        assert!(
            metrics.contains("idconsent_http_unavailable_total{cause=\"database\"}"),
            "{metrics}"
        );
    }

    /// A hosted page is for a person: the outage as a readable page, same status (its reads
    /// need the database, so PostgreSQL only).
    async fn pages_say_so(&self, app: &TestApp) {
        let page = app.get(&format!("/oauth/authorize/{}", self.session)).await;
        assert_eq!(page.status(), 503);
        assert_eq!(page.headers()["retry-after"], "5");
        assert!(
            page.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert!(
            page.text()
                .await
                .unwrap()
                .contains("Temporarily unavailable")
        );
    }

    async fn after_it(&self, app: &TestApp) {
        let application = &self.application;
        let after = eventually("a signed create succeeds again", || async {
            let response = create(app, application, &self.receiver.url).await;
            (response.status() == 201).then_some(response)
        })
        .await;
        json(after, 201).await;
        eventually("/readyz 200", || async {
            (app.get("/readyz").await.status() == 200).then_some(())
        })
        .await;
        // Nothing half-done: the creates during the outage left no session event behind; the
        // one after it did.
        assert_eq!(self.deliveries(app).await, self.events_before + 1);
    }
}
