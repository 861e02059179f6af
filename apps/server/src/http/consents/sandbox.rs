use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_consent::Decision;
use idconsent_kernel::Intent;

use super::requester;
use crate::context::AppContext;
use crate::http::auth::Signed;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};

async fn decide(
    context: &AppContext,
    signed: &Signed,
    session_id: &str,
    decision: Decision,
) -> Result<HttpResponse, ApiError> {
    let session = context
        .consents
        .sandbox_session(&requester(&signed.caller), session_id)
        .await?;
    // OAuth sessions mint their code and claims on approval.
    let session = if session.intent == Intent::Oauth {
        context.oauth.decide(session, decision, Vec::new()).await?
    } else {
        context
            .consents
            .decide(session, decision, None, Vec::new())
            .await?
    };
    let message = match decision {
        Decision::Approve => "Approved as the user would",
        Decision::Reject => "Rejected as the user would",
    };
    Ok(respond(
        StatusCode::OK,
        message,
        session.to_json(context.consents.now()),
    ))
}

/// Sandbox only (`mk_test_` keys): approve a pending session as its user would, with the same
/// events and webhooks.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "Approved", body = Object),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody),
        (status = 409, description = "No longer pending", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/consents/{sessionId}/approve")]
pub async fn approve(
    context: web::Data<AppContext>,
    signed: Signed,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(&context, &signed, &session_id, Decision::Approve).await
}

/// Sandbox only (`mk_test_` keys): reject a pending session as its user would.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("sessionId" = String, Path, description = "`cs_…`")),
    responses(
        (status = 200, description = "Rejected", body = Object),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such session for this application", body = ErrorBody),
        (status = 409, description = "No longer pending", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/consents/{sessionId}/reject")]
pub async fn reject(
    context: web::Data<AppContext>,
    signed: Signed,
    session_id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(&context, &signed, &session_id, Decision::Reject).await
}
