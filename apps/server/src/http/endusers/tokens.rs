use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_enduser::EndUserService;
use idconsent_enduser::TokenPair;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::required_installation;
use crate::http::envelope::{Envelope, respond};
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::ApiJson;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppLoginBody {
    /// From `/v1/auth/fido/authenticate/begin` with purpose `login`.
    challenge_id: String,
    /// The WebAuthn assertion (`PublicKeyCredential` JSON, base64url binary fields).
    #[schema(value_type = Object)]
    credential: Value,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshBody {
    refresh_token: String,
}

/// The app's tokens after a sign-in or a refresh.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppTokens {
    /// HS256 JWS, 15 minutes; send it with the `X-Device-ID` it was issued for.
    access_token: String,
    /// `rt_` + 64 hex characters, 30 days, rotated on every use.
    refresh_token: String,
    /// `Bearer`.
    token_type: &'static str,
    /// Seconds until the access token expires.
    expires_in: u64,
}

fn tokens(pair: TokenPair) -> AppTokens {
    AppTokens {
        access_token: pair.access_token,
        refresh_token: pair.refresh_token,
        token_type: "Bearer",
        expires_in: pair.expires_in,
    }
}

/// Signs the app in with a passkey assertion (purpose `login`): a 15-minute access token bound
/// to this `X-Device-ID` and a 30-day refresh token.
#[utoipa::path(
    tag = "app-auth",
    request_body = AppLoginBody,
    params(("X-Device-ID" = String, Header, description = "The app installation")),
    responses(
        (status = 200, description = "Tokens", body = Envelope<AppTokens>),
        (status = 400, description = "No X-Device-ID", body = ErrorBody),
        (status = 401, description = "The assertion does not verify", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody)
    )
)]
#[post("/v6/auth/login")]
pub async fn login(
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    body: ApiJson<AppLoginBody>,
) -> Result<HttpResponse, ApiError> {
    let device = required_installation(&req)?;
    let pair = endusers
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
        (status = 200, description = "Tokens", body = Envelope<AppTokens>),
        (status = 400, description = "No X-Device-ID", body = ErrorBody),
        (status = 401, description = "Invalid, expired, revoked or reused refresh token", body = ErrorBody),
        (status = 415, description = "Not application/json", body = ErrorBody)
    )
)]
#[post("/v6/auth/refresh")]
pub async fn refresh(
    endusers: web::Data<EndUserService>,
    req: HttpRequest,
    body: ApiJson<RefreshBody>,
) -> Result<HttpResponse, ApiError> {
    let device = required_installation(&req)?;
    let pair = endusers.refresh(&body.0.refresh_token, &device).await?;
    Ok(respond(StatusCode::OK, "Token refreshed", tokens(pair)))
}
