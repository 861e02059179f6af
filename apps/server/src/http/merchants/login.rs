use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use idconsent_merchant::MerchantService;
use serde::Deserialize;
use utoipa::ToSchema;

use super::views::SessionBody;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
pub struct LoginBody {
    email: String,
    password: String,
}

/// Signs a team member in. Ten failures in a row lock the member out for 15 minutes (429).
#[utoipa::path(
    tag = "merchants",
    request_body = LoginBody,
    responses(
        (status = 200, description = "Signed in", body = Envelope<SessionBody>),
        (status = 401, description = "Invalid email or password", body = ErrorBody),
        (status = 429, description = "Locked out; see Retry-After", body = ErrorBody)
    )
)]
#[post("/v1/merchants/login")]
pub async fn login(
    merchants: web::Data<MerchantService>,
    ApiJson(body): ApiJson<LoginBody>,
) -> Result<HttpResponse, ApiError> {
    let session = merchants.login(&body.email, &body.password).await?;
    Ok(respond(
        StatusCode::OK,
        "Signed in",
        SessionBody::from(session),
    ))
}
