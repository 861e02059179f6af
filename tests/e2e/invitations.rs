//! Invitations sent with sandbox keys (issue 31, item 7): a sandbox mandate or signature
//! request emails its recipients, so in production mode a sandbox invitation may go only to the
//! merchant team's verified addresses (dev mode delivers everything to the dev mailbox), and
//! every sandbox invitation counts against the application's send allowance (CONTRACT §9).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use idconsent_e2e::hosted::PageVisitor;
use idconsent_e2e::pdf::pdf;
use idconsent_e2e::scenario::Application;
use idconsent_e2e::{Backend, TestApp, error, json};
use idconsent_server::Mode;
use reqwest::{Method, Response};
use serde_json::{Value, json};

async fn signed(app: &TestApp, application: &Application, path: &str, body: &Value) -> Response {
    let bytes = serde_json::to_vec(body).unwrap();
    app.signed(
        Method::POST,
        path,
        &application.sandbox_key,
        &application.secret,
        &bytes,
    )
    .send()
    .await
    .unwrap()
}

async fn mandate_to(app: &TestApp, application: &Application, recipient: &str) -> Response {
    let body = json!({
        "recipient": recipient, "type": "standing_order", "amount": 12,
        "currency": "EUR", "frequency": "monthly", "description": "Club fee"
    });
    signed(app, application, "/v1/service/mandates", &body).await
}

async fn signature_for(app: &TestApp, application: &Application, signers: &[&str]) -> Response {
    let body = json!({
        "document": BASE64.encode(pdf(1, "")),
        "signers": signers
            .iter()
            .map(|email| json!({"email": email, "name": "Signer"}))
            .collect::<Vec<_>>(),
    });
    signed(app, application, "/v1/signature/documents", &body).await
}

async fn mandates_stored(app: &TestApp, application: &Application) -> u64 {
    let listed = app
        .signed(
            Method::GET,
            "/v1/service/mandates",
            &application.sandbox_key,
            &application.secret,
            b"",
        )
        .send()
        .await
        .unwrap();
    json(listed, 200).await["data"]["pagination"]["total"]
        .as_u64()
        .unwrap()
}

async fn in_production_sandbox_invitations_go_only_to_the_team(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| config.mode = Mode::Production).await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;

    // A stranger: 422 naming the field, nothing stored, nothing queued.
    let stranger = PageVisitor::address();
    let refused = error(
        mandate_to(&app, &application, &stranger).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "recipient", "{refused}");
    let said = refused["details"][0]["message"].as_str().unwrap();
    assert!(said.contains("sandbox") && said.contains("team"), "{said}");
    assert_eq!(mandates_stored(&app, &application).await, 0);
    assert!(app.queued_messages(&stranger).await.is_empty());
    let refused = error(
        signature_for(&app, &application, &[&stranger]).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(refused["details"][0]["field"], "signers[0].email");

    // The owner's address is the team's only once verified.
    error(
        mandate_to(&app, &application, &merchant.email).await,
        422,
        "validation_error",
    )
    .await;
    let verification = app.queued_messages(&merchant.email).await;
    let link = verification
        .iter()
        .find_map(|message| message.link.clone())
        .expect("the verification link is queued");
    let token = link.split("token=").nth(1).unwrap();
    json(
        app.post_json("/v1/merchants/email/verify-link", &json!({"token": token}))
            .await,
        200,
    )
    .await;
    json(mandate_to(&app, &application, &merchant.email).await, 200).await;
    let queued = app.queued_messages(&merchant.email).await;
    assert!(
        queued
            .iter()
            .any(|message| message.subject.contains("mandate")),
        "{queued:?}"
    );
    // The verified address in another case is the same address.
    json(
        mandate_to(&app, &application, &merchant.email.to_uppercase()).await,
        200,
    )
    .await;

    // A request's signers: the field names the one outside the team.
    let refused = error(
        signature_for(&app, &application, &[&merchant.email, &stranger]).await,
        422,
        "validation_error",
    )
    .await;
    assert_eq!(
        refused["details"][0]["field"], "signers[1].email",
        "{refused}"
    );
    assert_eq!(refused["details"].as_array().unwrap().len(), 1, "{refused}");
    json(
        signature_for(&app, &application, &[&merchant.email]).await,
        201,
    )
    .await;

    // A member is the team's once they accepted their emailed invitation.
    let member = PageVisitor::address();
    let invited = app
        .as_merchant(Method::POST, "/v1/merchants/users", &merchant.token)
        .json(&json!({"email": member, "name": "Mo Member", "role": "developer"}))
        .send()
        .await
        .unwrap();
    assert!(invited.status().is_success(), "{}", invited.status());
    error(
        mandate_to(&app, &application, &member).await,
        422,
        "validation_error",
    )
    .await;
    let link = app.queued_messages(&member).await[0]
        .link
        .clone()
        .expect("the invitation link is queued");
    let token = link.split("token=").nth(1).unwrap();
    json(
        app.post_json(
            "/v1/merchants/users/accept",
            &json!({"token": token, "password": "another long password"}),
        )
        .await,
        200,
    )
    .await;
    json(
        signature_for(&app, &application, &[&member, &merchant.email]).await,
        201,
    )
    .await;

    // A phone recipient decides in the app: no invitation email, nothing to refuse.
    json(mandate_to(&app, &application, "+15550100123").await, 200).await;
    app.stop().await;
}

async fn every_sandbox_invitation_counts_against_the_send_allowance(backend: Backend) {
    let Some(app) = TestApp::start_with(backend, |config| {
        config.notify.send_limits.per_client = 4;
    })
    .await
    else {
        return;
    };
    let merchant = app.register_merchant().await;
    let application = app.application(&merchant).await;
    // Four invitations: two mandates, a request with two signers.
    for _ in 0..2 {
        json(
            mandate_to(&app, &application, &PageVisitor::address()).await,
            200,
        )
        .await;
    }
    let signers = [PageVisitor::address(), PageVisitor::address()];
    json(
        signature_for(&app, &application, &[&signers[0], &signers[1]]).await,
        201,
    )
    .await;
    // The fifth is over the hour's allowance: 429 before anything is stored or sent.
    let fifth = PageVisitor::address();
    let refused = mandate_to(&app, &application, &fifth).await;
    assert!(refused.headers().contains_key("retry-after"));
    error(refused, 429, "rate_limited").await;
    assert_eq!(mandates_stored(&app, &application).await, 2);
    assert!(app.messages(&fifth).await.is_empty());
    error(
        signature_for(&app, &application, &[&fifth]).await,
        429,
        "rate_limited",
    )
    .await;
    // A phone recipient gets no email: not an invitation.
    json(mandate_to(&app, &application, "+15550100124").await, 200).await;
    // The next hour has a new allowance.
    app.advance(Duration::from_secs(3600));
    json(mandate_to(&app, &application, &fifth).await, 200).await;
    assert_eq!(app.messages(&fifth).await.len(), 1);
    app.stop().await;
}

mod production_sandbox_team_only {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        in_production_sandbox_invitations_go_only_to_the_team(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        in_production_sandbox_invitations_go_only_to_the_team(Backend::Postgres).await;
    }
}

mod sandbox_send_allowance {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        every_sandbox_invitation_counts_against_the_send_allowance(Backend::Sqlite).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        every_sandbox_invitation_counts_against_the_send_allowance(Backend::Postgres).await;
    }
}
