//! The gate chain every signed request passes (crates/access): a gate can refuse a request
//! before its handler runs, with the status, message, `Retry-After`, details and headers it
//! chose; an admitting gate's headers are on every response, 2xx and 4xx alike.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use idconsent_access::{Admission, Gate, GateRequest, Refusal, RefusalKind};
use idconsent_e2e::{Backend, TestApp, error, json};
use idconsent_kernel::FieldError;
use reqwest::Method;
use serde_json::json;

/// Refuses consent creation; admits everything else with a header.
#[derive(Debug, Default)]
struct NoNewConsents {
    admitted: AtomicUsize,
}

#[async_trait]
impl Gate for NoNewConsents {
    fn name(&self) -> &'static str {
        "no_new_consents"
    }

    async fn admit(&self, request: &GateRequest<'_>) -> Result<Admission, Refusal> {
        if request.method == "POST" && request.route == "/v1/consents/auth" {
            let mut refusal = Refusal::new(RefusalKind::RateLimited, "The test gate says no");
            refusal.retry_after_secs = Some(7);
            refusal.details = vec![FieldError::new("limit", "test")];
            refusal.headers = vec![("X-Test-Gate", "refused".into())];
            return Err(refusal);
        }
        self.admitted.fetch_add(1, Ordering::SeqCst);
        Ok(Admission {
            headers: vec![("X-Test-Gate", format!("admitted {}", request.route))],
            holds: Vec::new(),
        })
    }
}

async fn a_gate_refuses_before_the_handler_runs(backend: Backend) {
    let gate = Arc::new(NoNewConsents::default());
    let installed = gate.clone();
    let Some(app) = TestApp::start_with(backend, move |config| {
        config.extra_gates.push(installed);
    })
    .await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let body = serde_json::to_vec(&json!({
        "clientId": application.client_id,
        "recipient": "+15550009999",
        "intent": "TRANSACTION",
        "callbackUrl": "http://127.0.0.1:9/hooks",
        "transaction": {"type": "payment", "description": "Order 1", "amount": 1,
                        "currency": "EUR", "payee": "Shop"}
    }))
    .unwrap();
    let refused = app
        .signed(
            Method::POST,
            "/v1/consents/auth",
            &application.sandbox_key,
            &application.secret,
            &body,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(refused.headers()["retry-after"], "7");
    assert_eq!(refused.headers()["x-test-gate"], "refused");
    let refused = error(refused, 429, "rate_limited").await;
    assert_eq!(refused["message"], "The test gate says no");
    assert_eq!(refused["details"][0]["field"], "limit");

    // The handler never ran: no session, so no consent.created was written.
    let deliveries = app
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
        deliveries.headers()["x-test-gate"],
        "admitted /v1/webhooks/deliveries"
    );
    let deliveries = json(deliveries, 200).await;
    assert_eq!(deliveries["data"]["pagination"]["total"], 0, "{deliveries}");

    // A handler's own 4xx carries the admitting gate's headers too.
    let missing = app
        .signed(
            Method::GET,
            "/v1/consents/auth/cs_00000000000000000000000000000000000000",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(
        missing.headers()["x-test-gate"],
        "admitted /v1/consents/auth/{sessionId}"
    );
    error(missing, 404, "not_found").await;

    // A request that fails authentication never reaches the gates.
    let before = gate.admitted.load(Ordering::SeqCst);
    let unsigned = app
        .client
        .get(app.url("/v1/webhooks/deliveries"))
        .header("x-api-key", &application.sandbox_key)
        .send()
        .await
        .unwrap();
    assert!(unsigned.headers().get("x-test-gate").is_none());
    error(unsigned, 401, "unauthorized").await;
    assert_eq!(gate.admitted.load(Ordering::SeqCst), before);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    a_gate_refuses_before_the_handler_runs(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres() {
    a_gate_refuses_before_the_handler_runs(Backend::Postgres).await;
}
