use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::context::AppContext;
use crate::http::auth::Signed;
use crate::http::consents::requester;
use crate::http::envelope::respond;
use crate::http::error::{ApiError, ErrorBody};
use crate::http::extract::bearer_token;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExchangeBody {
    /// The authorization code.
    code: String,
    /// The original PKCE verifier.
    code_verifier: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct TokenBody {
    /// An access token issued to this application.
    token: String,
}

/// Exchanges an authorization code and its PKCE verifier for an access token (ES256 JWS) and the
/// approved claims. Any bad code or verifier is 400 `Invalid or expired authorization code`; an
/// attempt consumes the code, and reusing a code revokes the token it produced.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = ExchangeBody,
    responses(
        (status = 200, description = "Token response: token_type, access_token, expires_in, subject, scopes, claims, state (top level)", body = Object),
        (status = 400, description = "Invalid or expired authorization code", body = ErrorBody)
    )
)]
#[post("/v1/oauth/token")]
pub async fn exchange(
    context: web::Data<AppContext>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: ExchangeBody = signed.json()?;
    let granted = context
        .oauth
        .exchange(&requester(&signed.caller), &body.code, &body.code_verifier)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(json!({
            "code": 200,
            "error": false,
            "message": "Token issued",
            "token_type": "Bearer",
            "access_token": granted.access_token,
            "expires_in": granted.expires_in,
            "subject": granted.subject,
            "scopes": granted.scopes,
            "claims": granted.claims,
            "state": granted.state,
        })))
}

/// The public keys access tokens are signed with (RFC 7517), retired keys included until their
/// tokens expire.
#[utoipa::path(
    tag = "oauth",
    responses((status = 200, description = "JWK set", body = Object))
)]
#[get("/.well-known/jwks.json")]
pub async fn jwks(context: web::Data<AppContext>) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(context.oauth.jwks())
}

/// The approved claims of an access token (`Authorization: Bearer <access_token>`).
#[utoipa::path(
    tag = "oauth",
    security(("oauthAccessToken" = [])),
    responses(
        (status = 200, description = "data {sub, scope, claims}", body = Object),
        (status = 401, description = "Invalid, expired or revoked token", body = ErrorBody)
    )
)]
#[get("/v1/oauth/userinfo")]
pub async fn userinfo(
    context: web::Data<AppContext>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let token = bearer_token(&req).ok_or_else(|| ApiError::unauthorized("Missing access token"))?;
    let claims = context.oauth.userinfo(token).await?;
    Ok(respond(StatusCode::OK, "ok", claims))
}

/// RFC 7662 introspection for the application's own tokens: `{active: false}` for anything
/// else.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = TokenBody,
    responses((status = 200, description = "RFC 7662 response", body = Object))
)]
#[post("/v1/oauth/introspect")]
pub async fn introspect(
    context: web::Data<AppContext>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: TokenBody = signed.json()?;
    let answer = context
        .oauth
        .introspect(&requester(&signed.caller), &body.token)
        .await;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(answer))
}

/// RFC 7009 revocation: always 200, whether or not the token was this application's.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = TokenBody,
    responses((status = 200, description = "Revoked (or nothing to revoke)", body = Object))
)]
#[post("/v1/oauth/revoke")]
pub async fn revoke(
    context: web::Data<AppContext>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: TokenBody = signed.json()?;
    context
        .oauth
        .revoke(&requester(&signed.caller), &body.token)
        .await?;
    Ok(respond(StatusCode::OK, "Token revoked", json!({})))
}
