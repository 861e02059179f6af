//! `POST /oauth2/token`, `/oauth2/revoke`, `/oauth2/introspect`; `GET|POST /oauth2/userinfo`.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use idconsent_oidc::OidcProvider;
use idconsent_oidc::{ProtocolError, TokenRequest};
use serde::Serialize;
use utoipa::ToSchema;

use super::protocol::{error_response, no_store_json, parameters};

/// `Authorization: Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1);
/// `Ok(None)` without such a header.
fn basic_credentials(request: &HttpRequest) -> Result<Option<(String, String)>, ProtocolError> {
    let Some(value) = request.headers().get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let malformed = || ProtocolError::new("invalid_client", "Malformed Basic credentials");
    let text = value.to_str().map_err(|_| malformed())?;
    let Some(encoded) = text
        .strip_prefix("Basic ")
        .or_else(|| text.strip_prefix("basic "))
    else {
        return Ok(None);
    };
    if encoded.len() > 1024 {
        return Err(malformed());
    }
    let decoded = STANDARD.decode(encoded.trim()).map_err(|_| malformed())?;
    let decoded = String::from_utf8(decoded).map_err(|_| malformed())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(malformed)?;
    let unescape = |part: &str| -> String {
        url::form_urlencoded::parse(format!("x={part}").as_bytes())
            .next()
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default()
    };
    Ok(Some((unescape(id), unescape(secret))))
}

pub(super) fn token_request(
    request: &HttpRequest,
    body: &[u8],
) -> Result<TokenRequest, ProtocolError> {
    let is_form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return Err(ProtocolError::new(
            "invalid_request",
            "The body must be application/x-www-form-urlencoded",
        ));
    }
    let mut found = parameters(body)?;
    let mut take = |name: &str| found.remove(name);
    Ok(TokenRequest {
        grant_type: take("grant_type"),
        code: take("code"),
        redirect_uri: take("redirect_uri"),
        code_verifier: take("code_verifier"),
        refresh_token: take("refresh_token"),
        auth_req_id: take("auth_req_id"),
        scope: take("scope"),
        login_hint: take("login_hint"),
        login_hint_token: take("login_hint_token"),
        id_token_hint: take("id_token_hint"),
        binding_message: take("binding_message"),
        requested_expiry: take("requested_expiry"),
        token: take("token"),
        client_id: take("client_id"),
        client_secret: take("client_secret"),
        basic: basic_credentials(request)?,
    })
}

/// The token response (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct OidcTokenBody {
    access_token: String,
    /// `Bearer`.
    token_type: &'static str,
    expires_in: u64,
    /// ES256 JWT: iss, sub (pairwise), aud, exp, iat, auth_time, nonce, acr, amr, at_hash and
    /// the approved claims. With the code exchange, not with a refresh.
    #[serde(skip_serializing_if = "Option::is_none")]
    id_token: Option<String>,
    /// `ort_…`, 30 days, single use: each refresh answers the next one.
    #[serde(skip_serializing_if = "Option::is_none")]
    refresh_token: Option<String>,
    scope: String,
}

/// The protocol's error body (RFC 6749 §5.2).
#[derive(Debug, Serialize, ToSchema)]
pub struct OAuthErrorBody {
    error: String,
    error_description: String,
}

/// The token endpoint: `grant_type=authorization_code` with `code`, `code_verifier` and
/// `redirect_uri`, or `grant_type=refresh_token` with `refresh_token`; the client
/// authenticates by `client_secret_basic` or `client_secret_post`.
#[utoipa::path(
    tag = "oidc",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Tokens", body = OidcTokenBody),
        (status = 400, description = "invalid_request, invalid_grant, unsupported_grant_type", body = OAuthErrorBody),
        (status = 401, description = "invalid_client", body = OAuthErrorBody)
    )
)]
#[post("/oauth2/token")]
pub async fn token(
    oidc: web::Data<OidcProvider>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let result = match token_request(&request, &body) {
        Ok(parsed) => oidc.token(parsed).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(granted) => no_store_json(&OidcTokenBody {
            access_token: granted.access_token,
            token_type: "Bearer",
            expires_in: granted.expires_in,
            id_token: granted.id_token,
            refresh_token: granted.refresh_token,
            scope: granted.scope,
        }),
        Err(error) => error_response(&error),
    }
}

/// RFC 7009 revocation: 200 whether or not the token was the client's (nothing is revealed).
#[utoipa::path(
    tag = "oidc",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Revoked, or not the client's token"),
        (status = 401, description = "invalid_client", body = OAuthErrorBody)
    )
)]
#[post("/oauth2/revoke")]
pub async fn revoke(
    oidc: web::Data<OidcProvider>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let result = match token_request(&request, &body) {
        Ok(parsed) => oidc.revoke(parsed).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(()) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .finish(),
        Err(error) => error_response(&error),
    }
}

/// RFC 7662 introspection of the client's own tokens.
#[utoipa::path(
    tag = "oidc",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "`{active: true, …}` or `{active: false}`", body = Object),
        (status = 401, description = "invalid_client", body = OAuthErrorBody)
    )
)]
#[post("/oauth2/introspect")]
pub async fn introspect(
    oidc: web::Data<OidcProvider>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let result = match token_request(&request, &body) {
        Ok(parsed) => oidc.introspect(parsed).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(answer) => no_store_json(&answer),
        Err(error) => error_response(&error),
    }
}

fn bearer(request: &HttpRequest) -> Option<&str> {
    let value = request
        .headers()
        .get(header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))
        .map(str::trim)
}

async fn userinfo_of(oidc: &OidcProvider, request: &HttpRequest) -> HttpResponse {
    let Some(access_token) = bearer(request) else {
        return error_response(&ProtocolError::new(
            "invalid_token",
            "An access token is required (Authorization: Bearer)",
        ));
    };
    match oidc.userinfo(access_token).await {
        Ok(claims) => no_store_json(&claims),
        Err(error) => error_response(&error),
    }
}

/// The approved claims of an access token: `sub` (pairwise) and standard claims, with where
/// each was verified under `verification`.
#[utoipa::path(
    tag = "oidc",
    security(("oauthAccessToken" = [])),
    responses(
        (status = 200, description = "Claims", body = Object),
        (status = 401, description = "invalid_token", body = OAuthErrorBody)
    )
)]
#[get("/oauth2/userinfo")]
pub async fn userinfo_get(oidc: web::Data<OidcProvider>, request: HttpRequest) -> HttpResponse {
    userinfo_of(&oidc, &request).await
}

/// The userinfo endpoint by POST (OpenID Connect Core §5.3.1).
#[utoipa::path(
    tag = "oidc",
    security(("oauthAccessToken" = [])),
    responses(
        (status = 200, description = "Claims", body = Object),
        (status = 401, description = "invalid_token", body = OAuthErrorBody)
    )
)]
#[post("/oauth2/userinfo")]
pub async fn userinfo_post(oidc: web::Data<OidcProvider>, request: HttpRequest) -> HttpResponse {
    userinfo_of(&oidc, &request).await
}
