use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_merchant::MerchantService;
use idconsent_notification::SendLimits;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::MerchantBody;
use crate::http::auth::MerchantSession;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;
use crate::http::send_limits;

#[derive(Debug, Deserialize, ToSchema)]
pub struct LinkToken {
    /// The `token` of the emailed link.
    token: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct PhoneCode {
    /// The 6-digit code sent by SMS.
    code: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct Sent {
    /// `email` or `sms`.
    channel: &'static str,
}

/// Confirms the emailed verification link. Needs no session: the token is the proof
/// (single use, 24 hours).
#[utoipa::path(
    tag = "merchants",
    request_body = LinkToken,
    responses(
        (status = 200, description = "Email verified", body = Envelope<MerchantBody>),
        (status = 400, description = "Invalid or expired link", body = ErrorBody)
    )
)]
#[post("/v1/merchants/email/verify-link")]
pub async fn verify_email_link(
    merchants: web::Data<MerchantService>,
    ApiJson(body): ApiJson<LinkToken>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.verify_email_link(&body.token).await?;
    Ok(respond(
        StatusCode::OK,
        "Email verified",
        MerchantBody::from(&merchant),
    ))
}

/// Sends a new email verification link (at most one a minute).
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    responses(
        (status = 200, description = "Sent", body = Envelope<Sent>),
        (status = 409, description = "Already verified", body = ErrorBody),
        (status = 429, description = "Asked less than a minute ago, or too many codes requested from this client or overall", body = ErrorBody)
    )
)]
#[post("/v1/merchants/email/resend")]
pub async fn resend_email(
    merchants: web::Data<MerchantService>,
    send_limits: web::Data<SendLimits>,
    req: HttpRequest,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    send_limits::admit(&send_limits, &req, None).await?;
    merchants.resend_email_link(&actor).await?;
    Ok(respond(
        StatusCode::OK,
        "Verification link sent",
        Sent { channel: "email" },
    ))
}

/// Checks the SMS code (10 minutes, 5 attempts).
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    request_body = PhoneCode,
    responses(
        (status = 200, description = "Phone verified", body = Envelope<MerchantBody>),
        (status = 400, description = "Invalid or expired code", body = ErrorBody),
        (status = 409, description = "Already verified", body = ErrorBody)
    )
)]
#[post("/v1/merchants/phone/verify")]
pub async fn verify_phone(
    merchants: web::Data<MerchantService>,
    MerchantSession(actor): MerchantSession,
    ApiJson(body): ApiJson<PhoneCode>,
) -> Result<HttpResponse, ApiError> {
    let merchant = merchants.verify_phone(&actor, &body.code).await?;
    Ok(respond(
        StatusCode::OK,
        "Phone verified",
        MerchantBody::from(&merchant),
    ))
}

/// Sends a new SMS code (at most one a minute).
#[utoipa::path(
    tag = "merchants",
    security(("merchantJwt" = [])),
    responses(
        (status = 200, description = "Sent", body = Envelope<Sent>),
        (status = 409, description = "Already verified", body = ErrorBody),
        (status = 429, description = "Asked less than a minute ago, or too many codes requested from this client or overall", body = ErrorBody)
    )
)]
#[post("/v1/merchants/phone/resend")]
pub async fn resend_phone(
    merchants: web::Data<MerchantService>,
    send_limits: web::Data<SendLimits>,
    req: HttpRequest,
    MerchantSession(actor): MerchantSession,
) -> Result<HttpResponse, ApiError> {
    send_limits::admit(&send_limits, &req, None).await?;
    merchants.resend_phone_code(&actor).await?;
    Ok(respond(
        StatusCode::OK,
        "Verification code sent",
        Sent { channel: "sms" },
    ))
}
