use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_consent::{ConsentApprovals, ConsentService, Decision};

use super::read::ConsentSession;
use super::requester;
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

async fn decide(
    consent_approvals: &ConsentApprovals,
    consents: &ConsentService,
    signed: &Signed,
    session_id: &str,
    decision: Decision,
) -> Result<HttpResponse, ApiError> {
    let session = consent_approvals
        .decide_in_sandbox(&requester(&signed.caller), session_id, decision)
        .await?;
    let message = match decision {
        Decision::Approve => "Approved as the user would",
        Decision::Reject => "Rejected as the user would",
    };
    Ok(respond(
        StatusCode::OK,
        message,
        ConsentSession::of(&session, consents.now()),
    ))
}

/// Sandbox only (`mk_test_` keys): approve a pending session as its user would, with the same
/// events and webhooks.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "Approved", body = Envelope<ConsentSession>),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody),
        (status = 409, description = "No longer pending", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/consents/{sessionId}/approve")]
pub async fn approve(
    consent_approvals: web::Data<ConsentApprovals>,
    consents: web::Data<ConsentService>,
    signed: Signed,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(
        &consent_approvals,
        &consents,
        &signed,
        &session_id,
        Decision::Approve,
    )
    .await
}

/// Sandbox only (`mk_test_` keys): reject a pending session as its user would.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "Rejected", body = Envelope<ConsentSession>),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody),
        (status = 409, description = "No longer pending", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/consents/{sessionId}/reject")]
pub async fn reject(
    consent_approvals: web::Data<ConsentApprovals>,
    consents: web::Data<ConsentService>,
    signed: Signed,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(
        &consent_approvals,
        &consents,
        &signed,
        &session_id,
        Decision::Reject,
    )
    .await
}
