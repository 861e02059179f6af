//! OAuth with PKCE (spec §4.2, CONTRACT §5): access requests, status, token exchange, JWKS,
//! userinfo, introspection and revocation.

mod authorize;
mod requests;
mod tokens;

use idconsent_oauth::OAuthError;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(requests::create)
        .service(requests::status)
        .service(tokens::exchange)
        .service(tokens::jwks)
        .service(tokens::userinfo)
        .service(tokens::introspect)
        .service(tokens::revoke)
        .service(authorize::page)
        .service(authorize::status);
}

impl From<OAuthError> for ApiError {
    fn from(error: OAuthError) -> Self {
        match error {
            OAuthError::Invalid(errors) => ApiError::validation(errors),
            OAuthError::Consent(inner) => inner.into(),
            OAuthError::Unavailable(source) => ApiError::internal(source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
