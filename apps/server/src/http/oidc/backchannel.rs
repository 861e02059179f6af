//! `POST /oauth2/bc-authorize` (OpenID Connect CIBA 1.0, poll mode).

use actix_web::{HttpRequest, HttpResponse, post, web};
use idconsent_oidc::OidcProvider;
use serde::Serialize;
use utoipa::ToSchema;

use super::protocol::{error_response, no_store_json};
use super::token::{OAuthErrorBody, token_request};

/// CIBA's acknowledgement (§7.3).
#[derive(Debug, Serialize, ToSchema)]
pub struct BackchannelBody {
    /// Poll the token endpoint with it (`grant_type=urn:openid:params:grant-type:ciba`).
    auth_req_id: String,
    expires_in: u64,
    /// Seconds to wait between polls; faster is `slow_down`.
    interval: u64,
}

/// Asks the user with phone `login_hint` to approve in the app, showing `binding_message`;
/// the client authenticates as at the token endpoint and polls for the tokens.
#[utoipa::path(
    tag = "oidc",
    request_body(content = String, content_type = "application/x-www-form-urlencoded"),
    responses(
        (status = 200, description = "Started", body = BackchannelBody),
        (status = 400, description = "invalid_request, invalid_scope, unknown_user_id, invalid_binding_message", body = OAuthErrorBody),
        (status = 401, description = "invalid_client", body = OAuthErrorBody)
    )
)]
#[post("/oauth2/bc-authorize")]
pub async fn bc_authorize(
    oidc: web::Data<OidcProvider>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let result = match token_request(&request, &body) {
        Ok(parsed) => oidc.backchannel_authorize(parsed).await,
        Err(error) => Err(error),
    };
    match result {
        Ok(started) => no_store_json(&BackchannelBody {
            auth_req_id: started.auth_req_id,
            expires_in: started.expires_in,
            interval: started.interval,
        }),
        Err(error) => error_response(&error),
    }
}
