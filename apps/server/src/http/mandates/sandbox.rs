use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_approval::Decision;
use idconsent_mandate::MandateService;

use super::{MandateView, requester};
use crate::http::auth::Signed;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};

async fn decide(
    mandates: &MandateService,
    signed: &Signed,
    id: &str,
    decision: Decision,
) -> Result<HttpResponse, ApiError> {
    let mandate = mandates
        .decide_in_sandbox(&requester(&signed.caller), id, decision)
        .await?;
    let message = match decision {
        Decision::Approve => "Authorised as the recipient would",
        Decision::Reject => "Declined as the recipient would",
    };
    Ok(respond(
        StatusCode::OK,
        message,
        MandateView::of(&mandate, mandates),
    ))
}

/// Sandbox only (`mk_test_` keys): authorise a pending mandate as its recipient would —
/// `active`, with `mandate.signed`.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`md_…`")),
    responses(
        (status = 200, description = "Authorised", body = Envelope<MandateView>),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such mandate for this application", body = ErrorBody),
        (status = 409, description = "Not awaiting authorisation", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/mandates/{id}/approve")]
pub async fn approve(
    mandates: web::Data<MandateService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(&mandates, &signed, &id, Decision::Approve).await
}

/// Sandbox only (`mk_test_` keys): decline a pending mandate as its recipient would —
/// `cancelled`.
#[utoipa::path(
    tag = "sandbox",
    security(("signedRequest" = [])),
    params(("id" = String, Path, description = "`md_…`")),
    responses(
        (status = 200, description = "Declined", body = Envelope<MandateView>),
        (status = 403, description = "A live key", body = ErrorBody),
        (status = 404, description = "No such mandate for this application", body = ErrorBody),
        (status = 409, description = "Not awaiting authorisation", body = ErrorBody)
    )
)]
#[post("/v1/sandbox/mandates/{id}/reject")]
pub async fn reject(
    mandates: web::Data<MandateService>,
    signed: Signed,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    decide(&mandates, &signed, &id, Decision::Reject).await
}
