//! `GET|POST /oauth2/authorize` (OpenID Connect Core §3.1.2.1: both methods).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use idconsent_oidc::OidcProvider;

use crate::wiring::PageNonces;
use idconsent_oidc::{AuthorizeOutcome, AuthorizeParams, AuthorizeRefusal};

use super::pages::{error_page, phone_form};
use super::protocol::parameters;
use crate::http::hosted::page::hardened;

fn params_of(mut found: std::collections::HashMap<String, String>) -> AuthorizeParams {
    let mut take = |name: &str| found.remove(name);
    AuthorizeParams {
        response_type: take("response_type"),
        client_id: take("client_id"),
        redirect_uri: take("redirect_uri"),
        scope: take("scope"),
        state: take("state"),
        nonce: take("nonce"),
        code_challenge: take("code_challenge"),
        code_challenge_method: take("code_challenge_method"),
        login_hint: take("login_hint"),
        prompt: take("prompt"),
        max_age: take("max_age"),
        response_mode: take("response_mode"),
        request: take("request"),
        request_uri: take("request_uri"),
    }
}

async fn answer(oidc: &OidcProvider, nonces: &PageNonces, encoded: &[u8]) -> HttpResponse {
    let nonce = nonces.next();
    let params = match parameters(encoded) {
        Ok(found) => params_of(found),
        Err(error) => return error_page(&nonce, &error),
    };
    match oidc.authorize(params).await {
        Ok(AuthorizeOutcome::Started { location })
        | Err(AuthorizeRefusal::Redirect { location }) => hardened(HttpResponse::SeeOther())
            .insert_header((header::LOCATION, location))
            .finish(),
        Ok(AuthorizeOutcome::AskPhone { params }) => phone_form(&nonce, &params),
        Err(AuthorizeRefusal::Page(error)) => error_page(&nonce, &error),
    }
}

/// The authorization endpoint: checks the client and its exact redirect URI (else an error
/// page, never a redirect), then the request (errors go back to the redirect URI with `iss`);
/// with `login_hint` (E.164) the user's app is asked at once and the browser goes to the
/// hosted page, else a page asks for the phone number first.
#[utoipa::path(
    tag = "oidc",
    params(
        ("response_type" = String, Query, description = "`code`"),
        ("client_id" = String, Query, description = "The application's id"),
        ("redirect_uri" = String, Query, description = "Exactly as registered"),
        ("scope" = String, Query, description = "`openid` and claim scopes: phone, profile, email, address, identity"),
        ("code_challenge" = String, Query, description = "PKCE S256 challenge (required)"),
        ("code_challenge_method" = String, Query, description = "`S256`"),
        ("state" = Option<String>, Query, description = "Returned as given"),
        ("nonce" = Option<String>, Query, description = "Returned in the ID token"),
        ("login_hint" = Option<String>, Query, description = "The user's phone (E.164)")
    ),
    responses(
        (status = 303, description = "To the hosted approval page, or back to the client with an error"),
        (status = 200, description = "The phone form (no login_hint)", content_type = "text/html", body = String),
        (status = 400, description = "Unknown client or unregistered redirect URI: an error page", content_type = "text/html", body = String)
    )
)]
#[get("/oauth2/authorize")]
pub async fn authorize_get(
    oidc: web::Data<OidcProvider>,
    nonces: web::Data<PageNonces>,
    request: HttpRequest,
) -> HttpResponse {
    answer(&oidc, &nonces, request.query_string().as_bytes()).await
}

/// The authorization endpoint by form post (the phone form posts here).
#[utoipa::path(
    tag = "oidc",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 303, description = "To the hosted approval page, or back to the client with an error"),
        (status = 200, description = "The phone form (no login_hint)", content_type = "text/html", body = String),
        (status = 400, description = "Unknown client or unregistered redirect URI: an error page", content_type = "text/html", body = String)
    )
)]
#[post("/oauth2/authorize")]
pub async fn authorize_post(
    oidc: web::Data<OidcProvider>,
    nonces: web::Data<PageNonces>,
    body: web::Bytes,
) -> HttpResponse {
    answer(&oidc, &nonces, &body).await
}
