use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_enduser::TokenPair;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::required_installation;
use crate::context::AppContext;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoginBody {
    /// From `/v1/auth/fido/authenticate/begin` with purpose `login`.
    challenge_id: String,
    #[schema(value_type = Object)]
    credential: Value,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshBody {
    refresh_token: String,
}

fn tokens(pair: TokenPair) -> Value {
    json!({
        "accessToken": pair.access_token,
        "refreshToken": pair.refresh_token,
        "tokenType": "Bearer",
        "expiresIn": pair.expires_in,
    })
}

/// Signs the app in with a passkey assertion (purpose `login`): a 15-minute access token bound
/// to this `X-Device-ID` and a 30-day refresh token.
#[utoipa::path(
    tag = "app-auth",
    request_body = LoginBody,
    params(("X-Device-ID" = String, Header, description = "The app installation")),
    responses(
        (status = 200, description = "Tokens", body = Object),
        (status = 400, description = "No X-Device-ID", body = ErrorBody),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody)
    )
)]
#[post("/v6/auth/login")]
pub async fn login(
    context: web::Data<AppContext>,
    req: HttpRequest,
    body: ApiJson<LoginBody>,
) -> Result<HttpResponse, ApiError> {
    let device = required_installation(&req)?;
    let pair = context
        .endusers
        .login(&body.0.challenge_id, &body.0.credential, &device)
        .await?;
    Ok(respond(StatusCode::OK, "Signed in", tokens(pair)))
}

/// Rotates a refresh token: the old one is spent; presenting a spent one revokes every token
/// of that sign-in (401).
#[utoipa::path(
    tag = "app-auth",
    request_body = RefreshBody,
    params(("X-Device-ID" = String, Header, description = "The installation the token was issued for")),
    responses(
        (status = 200, description = "Tokens", body = Object),
        (status = 400, description = "No X-Device-ID", body = ErrorBody),
        (status = 401, description = "Invalid, expired, revoked or reused refresh token", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody)
    )
)]
#[post("/v6/auth/refresh")]
pub async fn refresh(
    context: web::Data<AppContext>,
    req: HttpRequest,
    body: ApiJson<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    let device = required_installation(&req)?;
    let pair = context
        .endusers
        .refresh(&body.0.refresh_token, &device)
        .await?;
    Ok(respond(StatusCode::OK, "Token refreshed", tokens(pair)))
}
