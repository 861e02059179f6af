use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_oauth::OAuthService;
use idconsent_oauth::{ActiveToken, TokenGrant, UserInfo};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::ClaimsBody;
use crate::http::auth::Signed;
use crate::http::consents::requester;
use crate::http::envelope::{Empty, Envelope, respond};
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

/// The token response (spec §2.2): the envelope's fields and the token's side by side, at the
/// top level, the token's in snake case as OAuth clients expect.
#[derive(Debug, Serialize, ToSchema)]
pub struct TokenResponse {
    /// 200.
    code: u16,
    /// Always `false`.
    error: bool,
    message: &'static str,
    /// `Bearer`.
    token_type: &'static str,
    /// ES256 JWS (RFC 9068 shape); verify with `/.well-known/jwks.json`.
    access_token: String,
    /// Seconds.
    expires_in: u64,
    /// The user's phone.
    subject: String,
    scopes: Vec<String>,
    claims: ClaimsBody,
    /// The request's `state`; `null` without one.
    #[schema(required = true)]
    state: Option<String>,
}

impl From<TokenGrant> for TokenResponse {
    fn from(granted: TokenGrant) -> Self {
        Self {
            code: 200,
            error: false,
            message: "Token issued",
            token_type: "Bearer",
            claims: (&granted.claims).into(),
            access_token: granted.access_token,
            expires_in: granted.expires_in,
            subject: granted.subject,
            scopes: granted.scopes,
            state: granted.state,
        }
    }
}

/// The public keys access tokens are signed with (RFC 7517).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Jwks {
    keys: Vec<Jwk>,
}

/// One P-256 public key (RFC 7517, RFC 7518 §6.2).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Jwk {
    /// `EC`.
    kty: String,
    /// `P-256`.
    crv: String,
    /// base64url.
    x: String,
    /// base64url.
    y: String,
    /// Names the key in a token's header.
    kid: String,
    /// `sig`.
    #[serde(rename = "use")]
    usage: String,
    /// `ES256`.
    alg: String,
}

/// What a live access token shows of the user.
#[derive(Debug, Serialize, ToSchema)]
pub struct UserInfoBody {
    /// The user's phone.
    sub: String,
    /// Space-separated scopes.
    scope: String,
    claims: ClaimsBody,
}

impl From<UserInfo> for UserInfoBody {
    fn from(info: UserInfo) -> Self {
        Self {
            scope: info.scopes.join(" "),
            claims: (&info.claims).into(),
            sub: info.subject,
        }
    }
}

/// RFC 7662: `{active: false}` for anything but a live token of the asking application and
/// environment, which shows the rest.
#[derive(Debug, Serialize, ToSchema)]
pub struct Introspection {
    active: bool,
    /// Space-separated scopes.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    scope: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    client_id: Option<String>,
    /// The user's phone.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    sub: Option<String>,
    /// `Bearer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    token_type: Option<&'static str>,
    /// Seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    iat: Option<i64>,
    /// Seconds since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    exp: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    iss: Option<String>,
    /// The token's id (`at_…`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    jti: Option<String>,
}

impl From<Option<ActiveToken>> for Introspection {
    fn from(active: Option<ActiveToken>) -> Self {
        let Some(ActiveToken { token, issuer }) = active else {
            return Self {
                active: false,
                scope: None,
                client_id: None,
                sub: None,
                token_type: None,
                iat: None,
                exp: None,
                iss: None,
                jti: None,
            };
        };
        Self {
            active: true,
            scope: Some(token.scopes.join(" ")),
            client_id: Some(token.client_id.to_string()),
            sub: Some(token.subject),
            token_type: Some("Bearer"),
            iat: Some(token.issued_at.as_secs()),
            exp: Some(token.expires_at.as_secs()),
            iss: Some(issuer),
            jti: Some(token.token_id),
        }
    }
}

/// Exchanges an authorization code and its PKCE verifier for an access token (ES256 JWS) and the
/// approved claims. Any bad code or verifier is 400 `Invalid or expired authorization code`; an
/// attempt consumes the code, and reusing a code revokes the token it produced.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = ExchangeBody,
    responses(
        (status = 200, description = "Token issued (fields at the top level)", body = TokenResponse),
        (status = 400, description = "Invalid or expired authorization code", body = ErrorBody)
    )
)]
#[post("/v1/oauth/token")]
pub async fn exchange(
    oauth: web::Data<OAuthService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: ExchangeBody = signed.json()?;
    let granted = oauth
        .exchange(&requester(&signed.caller), &body.code, &body.code_verifier)
        .await?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(TokenResponse::from(granted)))
}

/// The public keys access tokens are signed with (RFC 7517), retired keys included until their
/// tokens expire.
#[utoipa::path(
    tag = "oauth",
    responses((status = 200, description = "JWK set", body = Jwks))
)]
#[get("/.well-known/jwks.json")]
pub async fn jwks(oauth: web::Data<OAuthService>) -> Result<HttpResponse, ApiError> {
    // The signer's key set, read into the documented shape: a key of another shape is a
    // broken key store (500), never a silently different document.
    let jwks: Jwks = serde_json::from_value(oauth.jwks()).map_err(ApiError::internal)?;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "public, max-age=300"))
        .json(jwks))
}

/// The approved claims of an access token (`Authorization: Bearer <access_token>`).
#[utoipa::path(
    tag = "oauth",
    security(("oauthAccessToken" = [])),
    responses(
        (status = 200, description = "The token's subject, scope and claims", body = Envelope<UserInfoBody>),
        (status = 401, description = "Invalid, expired or revoked token", body = ErrorBody)
    )
)]
#[get("/v1/oauth/userinfo")]
pub async fn userinfo(
    oauth: web::Data<OAuthService>,
    req: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let token = bearer_token(&req).ok_or_else(|| ApiError::unauthorized("Missing access token"))?;
    let info = oauth.userinfo(token).await?;
    Ok(respond(StatusCode::OK, "ok", UserInfoBody::from(info)))
}

/// RFC 7662 introspection for the application's own tokens: `{active: false}` for anything
/// else.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = TokenBody,
    responses((status = 200, description = "RFC 7662 response (no envelope)", body = Introspection))
)]
#[post("/v1/oauth/introspect")]
pub async fn introspect(
    oauth: web::Data<OAuthService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: TokenBody = signed.json()?;
    let answer = oauth
        .introspect(&requester(&signed.caller), &body.token)
        .await;
    Ok(HttpResponse::Ok()
        .insert_header(("Cache-Control", "no-store"))
        .json(Introspection::from(answer)))
}

/// RFC 7009 revocation: always 200, whether or not the token was this application's.
#[utoipa::path(
    tag = "oauth",
    security(("signedRequest" = [])),
    request_body = TokenBody,
    responses((status = 200, description = "Revoked (or nothing to revoke)", body = Envelope<Empty>))
)]
#[post("/v1/oauth/revoke")]
pub async fn revoke(
    oauth: web::Data<OAuthService>,
    signed: Signed,
) -> Result<HttpResponse, ApiError> {
    let body: TokenBody = signed.json()?;
    oauth
        .revoke(&requester(&signed.caller), &body.token)
        .await?;
    Ok(respond(StatusCode::OK, "Token revoked", Empty {}))
}
