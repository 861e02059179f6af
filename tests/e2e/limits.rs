//! Abuse limits that must hold under a concurrent burst exactly as they do one request at a time
//! (issue 12): enrollments per phone, SMS-code attempts, and the per-client and global limits on
//! calls that send codes (CONTRACT §9). Each test fires 20 requests at once and counts.

use futures_util::future::join_all;
use idconsent_e2e::enduser::AppUser;
use idconsent_e2e::{Backend, TestApp, json, on_both_backends};
use reqwest::Response;
use serde_json::{Value, json};

on_both_backends!(
    a_burst_of_enrollments_for_one_phone_gets_five,
    a_burst_of_guesses_gets_five_comparisons,
);

async fn statuses(responses: Vec<Response>) -> Vec<(u16, Value)> {
    let mut out = Vec::new();
    for response in responses {
        let status = response.status().as_u16();
        let retry = response.headers().get("retry-after").is_some();
        let mut body: Value = response.json().await.unwrap();
        body["hasRetryAfter"] = json!(retry);
        out.push((status, body));
    }
    out
}

fn count(outcomes: &[(u16, Value)], status: u16) -> usize {
    outcomes.iter().filter(|(s, _)| *s == status).count()
}

async fn a_burst_of_enrollments_for_one_phone_gets_five(app: TestApp) {
    let phone = AppUser::new().phone;
    let burst = (0..20).map(|_| {
        let user = AppUser::new();
        let (app, phone) = (&app, phone.clone());
        async move {
            user.post(app, "/v1/enrollments", &json!({"phone": phone}))
                .await
        }
    });
    let outcomes = statuses(join_all(burst).await).await;
    assert_eq!(count(&outcomes, 201), 5, "{outcomes:?}");
    assert_eq!(count(&outcomes, 429), 15, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .filter(|(s, _)| *s == 429)
            .all(|(_, body)| body["hasRetryAfter"] == true)
    );
}

async fn a_burst_of_guesses_gets_five_comparisons(app: TestApp) {
    let mut user = AppUser::new();
    user.start_enrollment(&app).await;
    let right = user.code(&app).await;
    let wrong = if right == "000000" {
        "111111"
    } else {
        "000000"
    };
    let burst = (0..20).map(|_| {
        let (app, user) = (&app, &user);
        async move {
            user.post(
                app,
                "/v1/auth/fido/register/begin",
                &json!({"enrollmentId": user.enrollment_id, "otp": wrong}),
            )
            .await
        }
    });
    let outcomes = statuses(join_all(burst).await).await;
    let compared = outcomes
        .iter()
        .filter(|(_, body)| body["message"] == "Invalid or expired code")
        .count();
    let turned_away = outcomes
        .iter()
        .filter(|(_, body)| body["message"] == "Too many wrong codes; start a new enrollment")
        .count();
    assert_eq!((compared, turned_away), (5, 15), "{outcomes:?}");
    // The right code comes too late: no attempt is left.
    let late = user
        .post(
            &app,
            "/v1/auth/fido/register/begin",
            &json!({"enrollmentId": user.enrollment_id, "otp": right}),
        )
        .await;
    let late = json(late, 400).await;
    assert_eq!(
        late["message"],
        "Too many wrong codes; start a new enrollment"
    );
    let path = format!("/v1/enrollments/{}", user.enrollment_id);
    let shown = json(
        user.request(&app, reqwest::Method::GET, &path)
            .send()
            .await
            .unwrap(),
        200,
    )
    .await;
    assert_eq!(shown["data"]["status"], "failed");
}

/// CONTRACT §9 with small limits: 5 sending calls per client an hour, then 3 a minute overall.
mod send_limits {
    use super::*;

    async fn each_client_gets_its_allowance(backend: Backend) {
        let Some(app) = TestApp::start_with(backend, |config| {
            config.notify.send_limits.per_client = 5;
        })
        .await
        else {
            return;
        };
        // Twenty enrollments for twenty phones, all from this test's address.
        let burst = (0..20).map(|_| {
            let user = AppUser::new();
            let app = &app;
            async move {
                user.post(app, "/v1/enrollments", &json!({"phone": user.phone}))
                    .await
            }
        });
        let outcomes = statuses(join_all(burst).await).await;
        assert_eq!(count(&outcomes, 201), 5, "{outcomes:?}");
        assert_eq!(count(&outcomes, 429), 15, "{outcomes:?}");
        // Merchant registration sends codes too: the same address is out of allowance.
        let refused = app
            .post_json("/v1/merchants/register", &app.registration())
            .await;
        let refused = json(refused, 429).await;
        assert_eq!(refused["type"], "rate_limited");
        app.stop().await;
    }

    async fn everyone_together_gets_the_global_allowance(backend: Backend) {
        let Some(app) = TestApp::start_with(backend, |config| {
            config.notify.send_limits.global = 3;
        })
        .await
        else {
            return;
        };
        let burst = (0..20).map(|_| {
            let user = AppUser::new();
            let app = &app;
            async move {
                user.post(app, "/v1/enrollments", &json!({"phone": user.phone}))
                    .await
            }
        });
        let outcomes = statuses(join_all(burst).await).await;
        assert_eq!(count(&outcomes, 201), 3, "{outcomes:?}");
        // A minute later there is room again.
        app.advance(std::time::Duration::from_secs(61));
        let user = AppUser::new();
        json(
            user.post(&app, "/v1/enrollments", &json!({"phone": user.phone}))
                .await,
            201,
        )
        .await;
        app.stop().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn per_client_sqlite() {
        each_client_gets_its_allowance(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn per_client_postgres() {
        each_client_gets_its_allowance(Backend::Postgres).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn global_sqlite() {
        everyone_together_gets_the_global_allowance(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn global_postgres() {
        everyone_together_gets_the_global_allowance(Backend::Postgres).await;
    }
}
