use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_merchant::MerchantService;
use idconsent_merchant::RegisterRequest;
use idconsent_notification::SendLimits;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::views::{MerchantBody, SessionBody, UserBody};
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;
use crate::http::send_limits;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RegisterBody {
    business_name: String,
    contact_name: String,
    email: String,
    /// At least 10 characters.
    password: String,
    entity_type: String,
    registration_number: String,
    /// `YYYY-MM-DD`.
    date_registered: String,
    industry: String,
    /// E.164; receives the 6-digit verification code.
    phone: String,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Registration {
    merchant: MerchantBody,
    user: UserBody,
    /// A merchant JWT for the owner (1 hour).
    token: String,
    expires_in: u64,
}

/// Creates a merchant account and its owner. Checks the corporate registry, texts a 6-digit
/// code to `phone` and emails a verification link; returns a merchant JWT.
#[utoipa::path(
    tag = "merchants",
    request_body = RegisterBody,
    responses(
        (status = 201, description = "Registered", body = Envelope<Registration>),
        (status = 400, description = "Malformed body or missing field", body = ErrorBody),
        (status = 409, description = "An account with this email exists", body = ErrorBody),
        (status = 422, description = "Invalid values", body = ErrorBody),
        (status = 429, description = "Too many codes requested from this client or overall; see Retry-After", body = ErrorBody)
    )
)]
#[post("/v1/merchants/register")]
pub async fn register(
    merchants: web::Data<MerchantService>,
    send_limits: web::Data<SendLimits>,
    req: HttpRequest,
    ApiJson(body): ApiJson<RegisterBody>,
) -> Result<HttpResponse, ApiError> {
    send_limits::admit(&send_limits, &req, None).await?;
    let registered = merchants
        .register(RegisterRequest {
            business_name: body.business_name,
            contact_name: body.contact_name,
            email: body.email,
            password: body.password,
            entity_type: body.entity_type,
            registration_number: body.registration_number,
            date_registered: body.date_registered,
            industry: body.industry,
            phone: body.phone,
        })
        .await?;
    Ok(respond(
        StatusCode::CREATED,
        "Merchant registered; verify the email link and the phone code",
        Registration {
            merchant: (&registered.merchant).into(),
            user: (&registered.owner).into(),
            token: registered.session.token,
            expires_in: registered.session.expires_in,
        },
    ))
}

impl From<idconsent_merchant::SessionToken> for SessionBody {
    fn from(session: idconsent_merchant::SessionToken) -> Self {
        Self {
            token: session.token,
            expires_in: session.expires_in,
        }
    }
}
