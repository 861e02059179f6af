//! What the `/oauth2/*` handlers share: form and query parameters read once each (RFC 6749
//! §3.1: a repeated parameter is an error), and the protocol's JSON errors.

use std::collections::HashMap;

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use idconsent_oidc::ProtocolError;
use serde_json::json;

/// Form and query bodies above this are refused before parsing.
pub const MAX_FORM_BYTES: usize = 16 * 1024;

/// The parameters of an `application/x-www-form-urlencoded` text; empty values count as absent
/// (RFC 6749 §3.1). A parameter given twice is `invalid_request`.
pub fn parameters(encoded: &[u8]) -> Result<HashMap<String, String>, ProtocolError> {
    if encoded.len() > MAX_FORM_BYTES {
        return Err(ProtocolError::new(
            "invalid_request",
            "The request is too large",
        ));
    }
    let mut out = HashMap::new();
    for (name, value) in url::form_urlencoded::parse(encoded) {
        if value.is_empty() {
            continue;
        }
        if out.insert(name.to_string(), value.into_owned()).is_some() {
            return Err(ProtocolError::new(
                "invalid_request",
                format!("Parameter {name} is given more than once"),
            ));
        }
    }
    Ok(out)
}

/// The protocol's error response: `{error, error_description}`, never cached; a 401 says how
/// to authenticate (`WWW-Authenticate`).
pub fn error_response(error: &ProtocolError) -> HttpResponse {
    let status = StatusCode::from_u16(error.status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = HttpResponse::build(status);
    response.insert_header((header::CACHE_CONTROL, "no-store"));
    if status == StatusCode::UNAUTHORIZED {
        let challenge = if error.error == "invalid_token" {
            format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\"",
                error.description
            )
        } else {
            "Basic realm=\"oauth2\"".to_owned()
        };
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            response.insert_header((header::WWW_AUTHENTICATE, value));
        }
    }
    response.json(json!({"error": error.error, "error_description": error.description}))
}

/// A JSON answer of the protocol: never cached (RFC 6749 §5.1).
pub fn no_store_json(body: &impl serde::Serialize) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"))
        .json(body)
}
