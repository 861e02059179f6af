//! Billing through the real server (issue 17): plan rate limits with `RateLimit-*` headers on
//! every signed response, requests in flight, monthly quotas, usage, invoices closed by the
//! scheduler and by the operator, and two processes on one database holding a merchant to
//! its per-minute limit. The operator's plans and the invoices are in `invoices.rs`.

mod invoices;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures_util::future::join_all;
use idconsent_access::{Admission, Gate, GateRequest, Refusal};
use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{Backend, TestApp, error, json};
use reqwest::{Method, Response};
use serde_json::{Value, json};

/// Holds `GET /v1/service/billings` for a while after the rate-limit gate admitted it: a slow
/// request, whose concurrency slot stays taken meanwhile.
#[derive(Debug)]
struct SlowInvoices;

#[async_trait]
impl Gate for SlowInvoices {
    fn name(&self) -> &'static str {
        "slow_invoices"
    }

    async fn admit(&self, request: &GateRequest<'_>) -> Result<Admission, Refusal> {
        if request.route == "/v1/service/billings" {
            tokio::time::sleep(Duration::from_millis(1_500)).await;
        }
        Ok(Admission::default())
    }
}

async fn start_limited(backend: Backend) -> Option<TestApp> {
    TestApp::start_with(backend, |config| {
        config.billing.rate_limits = true;
        config.extra_gates.push(Arc::new(SlowInvoices));
    })
    .await
}

pub(super) async fn signed(
    app: &TestApp,
    base: &str,
    key: &str,
    application: &Application,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Response {
    let bytes = body
        .map(|body| serde_json::to_vec(body).unwrap())
        .unwrap_or_default();
    app.signed_to(
        base,
        method,
        path,
        key,
        &application.secret,
        &bytes,
        app.signing_millis(),
    )
    .send()
    .await
    .unwrap()
}

fn header(response: &Response, name: &str) -> String {
    response
        .headers()
        .get(name)
        .unwrap_or_else(|| panic!("{name} missing"))
        .to_str()
        .unwrap()
        .to_owned()
}

fn mandate(recipient: &str) -> Value {
    json!({
        "recipient": recipient,
        "type": "direct_debit",
        "amount": 10,
        "currency": "EUR",
        "frequency": "monthly",
        "description": "Gym"
    })
}

pub(super) async fn set_plan(app: &TestApp, merchant: &str, body: Value) -> Value {
    let response = app
        .as_operator(
            Method::POST,
            &format!("/v1/admin/merchants/{merchant}/plan"),
        )
        .json(&body)
        .send()
        .await
        .unwrap();
    json(response, 200).await
}

async fn the_sixty_first_request_in_a_minute_is_refused_and_every_response_says_so(
    backend: Backend,
) {
    let Some(app) = start_limited(backend).await else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let key = application.sandbox_key.clone();
    let base = app.base.clone();
    // Sixty requests of every kind of outcome: 200, 404, 422; each carries the headers.
    for n in 1..=60u32 {
        let (path, status) = match n % 3 {
            0 => ("/v1/service/mandates/md_01JNOSUCHMANDATE00000000000", 404),
            1 => ("/v1/service/mandates?limit=1", 200),
            _ => ("/v1/service/mandates?limit=1000", 422),
        };
        let response = signed(&app, &base, &key, &application, Method::GET, path, None).await;
        assert_eq!(response.status().as_u16(), status, "{path}");
        assert_eq!(header(&response, "ratelimit-limit"), "60");
        let remaining: u32 = header(&response, "ratelimit-remaining").parse().unwrap();
        assert!(
            remaining <= 60 - n + 1,
            "request {n}: {remaining} remaining"
        );
        assert!(header(&response, "ratelimit-reset").parse::<u64>().unwrap() <= 60);
    }
    let list = || {
        signed(
            &app,
            &base,
            &key,
            &application,
            Method::GET,
            "/v1/service/mandates",
            None,
        )
    };
    let refused = list().await;
    assert_eq!(header(&refused, "ratelimit-remaining"), "0");
    let retry_after: u64 = header(&refused, "retry-after").parse().unwrap();
    assert!((1..=2).contains(&retry_after), "{retry_after}");
    let body = error(refused, 429, "rate_limited").await;
    assert_eq!(body["details"][0]["field"], "requestsPerMinute");
    // GCRA, not a fixed window: a second later one request fits, not a whole minute's.
    app.advance(Duration::from_millis(1_100));
    let again = list().await;
    assert_eq!(again.status(), 200);
    let over = list().await;
    assert_eq!(over.status(), 429);

    // Another merchant has its own budget.
    let other = app.register_merchant().await;
    let other_app = app.application(&other).await;
    let fresh = signed(
        &app,
        &base,
        &other_app.sandbox_key,
        &other_app,
        Method::GET,
        "/v1/service/mandates",
        None,
    )
    .await;
    assert_eq!(fresh.status(), 200);
    assert_eq!(header(&fresh, "ratelimit-remaining"), "59");

    // Custom enterprise limits apply at once.
    set_plan(
        &app,
        &merchant.id,
        json!({"plan": "enterprise", "limits": {"requestsPerMinute": 600, "requestsPerDay": null}}),
    )
    .await;
    let enterprise = list().await;
    assert_eq!(enterprise.status(), 200);
    assert_eq!(header(&enterprise, "ratelimit-limit"), "600");
}

async fn requests_in_flight_are_limited_per_plan(backend: Backend) {
    let Some(app) = start_limited(backend).await else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let base = app.base.clone();
    let slow = || {
        signed(
            &app,
            &base,
            &application.sandbox_key,
            &application,
            Method::GET,
            "/v1/service/billings",
            None,
        )
    };
    // Six slow requests at once on free (5 in flight): exactly one is refused, at once.
    let started = Instant::now();
    let responses = join_all((0..6).map(|_| slow())).await;
    let mut statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429]);
    assert!(started.elapsed() >= Duration::from_millis(1_500));
    let refused = responses.into_iter().find(|r| r.status() == 429).unwrap();
    assert_eq!(header(&refused, "ratelimit-limit"), "5");
    let body = error(refused, 429, "rate_limited").await;
    assert_eq!(body["details"][0]["field"], "concurrent");

    // Finished requests freed their slots. A client that gives up does not stop actix-web's
    // work on its request (actix-web #3462: HTTP/1 handlers are not cancelled on disconnect),
    // so that request keeps its slot while the server still works on it — and frees it when
    // the work ends, never later: five abandoned slow requests fill the five slots, then free
    // them all.
    let abandon = || {
        app.signed(
            Method::GET,
            "/v1/service/billings",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .timeout(Duration::from_millis(200))
        .send()
    };
    let abandoned = join_all((0..5).map(|_| abandon())).await;
    assert!(abandoned.iter().all(Result::is_err), "the clients gave up");
    let busy = slow().await;
    assert_eq!(
        busy.status(),
        429,
        "the abandoned requests are still being worked on"
    );
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let responses = join_all((0..5).map(|_| slow())).await;
    let statuses: Vec<u16> = responses.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses, [200; 5], "every slot came back");
}

async fn quotas_count_live_actions_only_and_usage_shows_them(backend: Backend) {
    let Some(app) = TestApp::start(backend).await else {
        return;
    };
    let (merchant, application, live_key) = app.live_merchant().await;
    let base = app.base.clone();
    let create = |key: String| {
        let app = &app;
        let application = &application;
        let base = &base;
        async move {
            let n = idconsent_e2e::scenario::unique();
            let recipient = format!("member-{n}@gym.example");
            signed(
                app,
                base,
                &key,
                application,
                Method::POST,
                "/v1/service/mandates",
                Some(&mandate(&recipient)),
            )
            .await
        }
    };
    // Free: ten live mandates a month. Sandbox ones are never counted.
    for _ in 0..10 {
        assert_eq!(create(live_key.clone()).await.status(), 200);
    }
    assert_eq!(create(application.sandbox_key.clone()).await.status(), 200);
    let over = create(live_key.clone()).await;
    assert!(over.headers().contains_key("retry-after"));
    let body = error(over, 429, "rate_limited").await;
    assert_eq!(body["details"][0]["field"], "quota_exceeded", "{body}");

    let usage_now = || async {
        let response = signed(
            &app,
            &base,
            &live_key,
            &application,
            Method::GET,
            "/v1/service/billings/usage",
            None,
        )
        .await;
        json(response, 200).await["data"].clone()
    };
    let data = usage_now().await;
    assert_eq!(data["plan"], "free");
    assert_eq!(data["usage"]["mandates"], json!({"used": 10, "limit": 10}));
    assert_eq!(data["usage"]["consents"], json!({"used": 0, "limit": 100}));
    assert_eq!(data["usage"]["verifications"]["limit"], 10);
    // Live signed calls: 10 created + 1 refused by the quota + this one (sandbox not counted).
    assert_eq!(data["apiCalls"]["total"], 12, "{data}");
    assert!(data["apiCalls"]["dailyAverage"].as_f64().unwrap() > 0.0);
    assert_eq!(data["limits"]["requestsPerMinute"], 60);

    // The dashboard sees the same; an operator raising the plan lifts the quota at once.
    let dashboard = app
        .as_merchant(Method::GET, "/v1/merchants/billing/usage", &merchant.token)
        .send()
        .await
        .unwrap();
    assert_eq!(
        json(dashboard, 200).await["data"]["usage"]["mandates"]["used"],
        10
    );
    let anonymous = app.get("/v1/merchants/billing/usage").await;
    error(anonymous, 401, "unauthorized").await;
    // A live consent and its approval with a passkey count a consent and an authentication.
    let mut user = AppUser::enrolled(&app).await;
    let consent = signed(
        &app,
        &base,
        &live_key,
        &application,
        Method::POST,
        "/v1/consents/auth",
        Some(&json!({
            "clientId": application.client_id,
            "recipient": user.phone,
            "intent": "TRANSACTION",
            "callbackUrl": "https://shop.example/hooks",
            "transaction": {"type": "payment", "description": "Order 7", "amount": 5,
                            "currency": "EUR", "payee": "Example Shop"}
        })),
    )
    .await;
    let session = json(consent, 201).await["data"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    let begun = user.begun(&app, "consent", Some(&session)).await;
    let credential = user.sign(&begun);
    json(
        user.complete(&app, &begun, &credential, "approve").await,
        200,
    )
    .await;
    let data = usage_now().await;
    assert_eq!(data["usage"]["consents"], json!({"used": 1, "limit": 100}));
    assert_eq!(
        data["usage"]["authentications"],
        json!({"used": 1, "limit": 1000})
    );

    set_plan(&app, &merchant.id, json!({"plan": "enterprise"})).await;
    assert_eq!(create(live_key.clone()).await.status(), 200);
    let data = usage_now().await;
    assert_eq!(
        data["usage"]["mandates"],
        json!({"used": 11, "limit": null})
    );
}

async fn two_processes_hold_a_merchant_to_one_per_minute_budget(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| config.billing.rate_limits = true).await
    else {
        return;
    };
    let second = app
        .second_server_with(|config| config.billing.rate_limits = true)
        .await;
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    let bases = [app.base.clone(), second.url()];
    // Warm both processes up so each holds a lease, then spend the minute from both.
    let started = Instant::now();
    let mut admitted = 0u64;
    for n in 0..120 {
        let base = &bases[n % 2];
        let response = signed(
            &app,
            base,
            &application.sandbox_key,
            &application,
            Method::GET,
            "/v1/service/mandates?limit=1",
            None,
        )
        .await;
        match response.status().as_u16() {
            200 => admitted += 1,
            429 => {}
            other => panic!("unexpected {other}"),
        }
    }
    // CONTRACT §7: each process holds at most a fifth of the limit (12 of 60): the merchant
    // gets no more than the limit (plus what the bucket refilled meanwhile, one a second)
    // and no less than the limit minus one slice for the other process.
    let refilled = started.elapsed().as_secs() + 1;
    assert!(
        (48..=60 + refilled).contains(&admitted),
        "{admitted} admitted in {:?}",
        started.elapsed()
    );
    second.stop().await;
}

macro_rules! on_both_backends_with_own_server {
    ($($name:ident),* $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(idconsent_e2e::Backend::Sqlite).await;
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name(idconsent_e2e::Backend::Postgres).await;
                }
            }
        )*
    };
}

on_both_backends_with_own_server!(
    the_sixty_first_request_in_a_minute_is_refused_and_every_response_says_so,
    requests_in_flight_are_limited_per_plan,
    quotas_count_live_actions_only_and_usage_shows_them,
    two_processes_hold_a_merchant_to_one_per_minute_budget,
);
