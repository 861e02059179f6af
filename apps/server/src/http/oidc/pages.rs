//! The HTML of `/oauth2/authorize`: the error page (a bad client or redirect URI is shown, never
//! redirected) and the phone form (no `login_hint`: the user names the phone to approve with).

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header;
use idconsent_oidc::{AuthorizeParams, ProtocolError};

use crate::http::hosted::page::{escape, hardened};

const STYLE: &str = "body{margin:0;font:16px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1d2330}\
main{max-width:26rem;margin:3rem auto;padding:2rem;background:#fff;border-radius:12px;box-shadow:0 1px 4px rgba(0,0,0,.12)}\
input{font:inherit;width:100%;box-sizing:border-box;padding:.6rem;margin:.5rem 0}\
button{font:inherit;padding:.6rem 1.2rem}";

fn page(status: StatusCode, nonce: &str, title: &str, body: &str) -> HttpResponse {
    let policy = format!(
        "default-src 'none'; style-src 'nonce-{nonce}'; form-action 'self'; base-uri 'none'; \
         frame-ancestors 'none'"
    );
    hardened(HttpResponse::build(status))
        .content_type("text/html; charset=utf-8")
        .insert_header((header::CONTENT_SECURITY_POLICY, policy))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .body(format!(
            "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <meta name=\"referrer\" content=\"no-referrer\"><meta name=\"robots\" content=\"noindex\">\
             <title>{title}</title><style nonce=\"{nonce}\">{STYLE}</style></head>\
             <body><main>{body}</main></body></html>\n"
        ))
}

/// The request cannot go back to the client: say why, here.
pub fn error_page(nonce: &str, error: &ProtocolError) -> HttpResponse {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_REQUEST);
    let body = format!(
        "<h1>This sign-in request cannot be completed</h1>\
         <p id=\"error\" data-error=\"{code}\">{description}</p>\
         <p>Go back to the site you came from and try again.</p>",
        code = escape(error.error),
        description = escape(&error.description),
    );
    page(status, nonce, "Sign-in request refused", &body)
}

/// Asks for the phone number and posts the request's parameters back with it as `login_hint`.
pub fn phone_form(nonce: &str, params: &AuthorizeParams) -> HttpResponse {
    let fields = [
        ("response_type", &params.response_type),
        ("client_id", &params.client_id),
        ("redirect_uri", &params.redirect_uri),
        ("scope", &params.scope),
        ("state", &params.state),
        ("nonce", &params.nonce),
        ("code_challenge", &params.code_challenge),
        ("code_challenge_method", &params.code_challenge_method),
        ("prompt", &params.prompt),
        ("max_age", &params.max_age),
        ("response_mode", &params.response_mode),
    ];
    let mut hidden = String::new();
    for (name, value) in fields {
        if let Some(value) = value {
            hidden.push_str(&format!(
                "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
                escape(value)
            ));
        }
    }
    let body = format!(
        "<h1>Sign in with idconsent</h1>\
         <p>Enter the phone number of your idconsent app. You approve in the app.</p>\
         <form method=\"post\" action=\"/oauth2/authorize\">{hidden}\
         <label for=\"login_hint\">Phone number</label>\
         <input id=\"login_hint\" name=\"login_hint\" type=\"tel\" autocomplete=\"tel\" \
         placeholder=\"+15551234567\" required>\
         <button type=\"submit\">Continue</button></form>"
    );
    page(StatusCode::OK, nonce, "Sign in with idconsent", &body)
}
