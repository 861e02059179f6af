//! The operator's plans and the monthly invoices (issue 17): bad plans refused, months closed
//! by the scheduler and by the operator, overdue on time, paid once.

use std::time::Duration;

use idconsent_e2e::{TestApp, error, json};
use reqwest::Method;
use serde_json::{Value, json};

use super::{set_plan, signed};

async fn the_operator_sets_plans_and_refuses_bad_ones(app: TestApp) {
    let merchant = app.register_merchant().await;
    let path = format!("/v1/admin/merchants/{}/plan", merchant.id);
    let plan = |body: Value| {
        let request = app.as_operator(Method::POST, &path).json(&body);
        async move { request.send().await.unwrap() }
    };
    for (body, field) in [
        (json!({"plan": "gold"}), "plan"),
        (
            json!({"plan": "basic", "limits": {"concurrent": 9}}),
            "limits",
        ),
        (
            json!({"plan": "enterprise", "limits": {"requestsPerMinute": 0}}),
            "limits.requestsPerMinute",
        ),
    ] {
        let refused = error(plan(body.clone()).await, 422, "validation_error").await;
        assert_eq!(refused["details"][0]["field"], field, "{body}");
    }
    error(plan(json!({"plan": 7})).await, 400, "bad_request").await;
    let set = json(plan(json!({"plan": "growth"})).await, 200).await;
    assert_eq!(
        set["data"],
        json!({"merchantId": merchant.id, "plan": "growth",
               "limits": {"requestsPerMinute": 1000, "requestsPerDay": 500000, "concurrent": 50}})
    );
    let unknown = app
        .as_operator(Method::POST, "/v1/admin/merchants/mer_nobody/plan")
        .json(&json!({"plan": "basic"}))
        .send()
        .await
        .unwrap();
    error(unknown, 404, "not_found").await;
    let not_operator = app
        .client
        .post(app.url(&path))
        .json(&json!({"plan": "enterprise"}))
        .send()
        .await
        .unwrap();
    error(not_operator, 401, "unauthorized").await;
}

async fn months_close_into_invoices_that_are_paid_or_lapse(app: TestApp) {
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    set_plan(&app, &merchant.id, json!({"plan": "basic"})).await;
    let base = app.base.clone();
    let key = application.sandbox_key.clone();
    let list = |query: &'static str| {
        let (app, base, key, application) = (&app, &base, &key, &application);
        async move {
            signed(
                app,
                base,
                key,
                application,
                Method::GET,
                &format!("/v1/service/billings{query}"),
                None,
            )
            .await
        }
    };
    for (query, field) in [
        ("?period=2026-13", "period"),
        ("?status=late", "status"),
        ("?limit=101", "limit"),
    ] {
        let refused = error(list(query).await, 422, "validation_error").await;
        assert_eq!(refused["details"][0]["field"], field);
    }
    // The current month cannot be closed yet.
    let now = app.now_millis();
    let this_month =
        idconsent_kernel::UsagePeriod::of(idconsent_kernel::Timestamp::from_millis(now));
    let close = |period: String| {
        let request = app
            .as_operator(Method::POST, "/v1/admin/billing/close-period")
            .json(&json!({ "period": period }));
        async move { request.send().await.unwrap() }
    };
    error(close(this_month.to_string()).await, 422, "validation_error").await;
    let dashboard = app
        .as_merchant(
            Method::GET,
            "/v1/merchants/billing/invoices",
            &merchant.token,
        )
        .send()
        .await
        .unwrap();
    assert_eq!(json(dashboard, 200).await["data"]["invoices"], json!([]));

    // Into next month: the scheduler closes this one by itself.
    let next = this_month.next();
    let into_next = u64::try_from(next.starts_at().as_millis() - now).unwrap() + 3_600_000;
    app.advance(Duration::from_millis(into_next));
    let mut invoices = Value::Null;
    for _ in 0..100 {
        invoices = json(list("").await, 200).await["data"].clone();
        if invoices["pagination"]["total"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let invoice = invoices["invoices"][0].clone();
    assert_eq!(invoice["period"], this_month.to_string(), "{invoices}");
    assert_eq!(invoice["status"], "pending");
    assert_eq!(invoice["amount"], 79.0);
    assert_eq!(invoice["currency"], "USD");
    assert_eq!(invoice["plan"], "basic");
    assert_eq!(invoice["paidAt"], Value::Null);
    assert_eq!(
        invoice["items"],
        json!([{"description": format!("Basic plan, {this_month}"), "amount": 79.0}])
    );
    // The operator closing it again issues nothing new.
    let closed = json(close(this_month.to_string()).await, 200).await;
    assert_eq!(closed["data"]["issued"], 0);
    assert_eq!(closed["data"]["alreadyInvoiced"], 1);

    // Fourteen days after issue it is overdue, then the operator marks it paid.
    app.advance(Duration::from_secs(15 * 24 * 3600));
    let overdue = json(list("?status=overdue").await, 200).await;
    assert_eq!(overdue["data"]["pagination"]["total"], 1);
    let id = invoice["id"].as_str().unwrap();
    let paid = app
        .as_operator(Method::POST, &format!("/v1/admin/invoices/{id}/mark-paid"))
        .send()
        .await
        .unwrap();
    let paid = json(paid, 200).await;
    assert_eq!(paid["data"]["invoice"]["status"], "paid");
    assert!(paid["data"]["invoice"]["paidAt"].is_string());
    let listed = json(list("?status=paid").await, 200).await;
    assert_eq!(listed["data"]["invoices"][0]["id"], id);
    let unknown = app
        .as_operator(Method::POST, "/v1/admin/invoices/in_nope/mark-paid")
        .send()
        .await
        .unwrap();
    error(unknown, 404, "not_found").await;

    // Another merchant sees only its own invoices.
    let other = app.register_merchant().await;
    let other_app = app.application(&other).await;
    let theirs = signed(
        &app,
        &base,
        &other_app.sandbox_key,
        &other_app,
        Method::GET,
        "/v1/service/billings",
        None,
    )
    .await;
    assert_eq!(json(theirs, 200).await["data"]["invoices"], json!([]));
}

idconsent_e2e::on_both_backends!(
    the_operator_sets_plans_and_refuses_bad_ones,
    months_close_into_invoices_that_are_paid_or_lapse,
);
