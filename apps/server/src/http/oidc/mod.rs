//! The OpenID Connect front door (issue 34, CONTRACT §10): the merchant's client configuration
//! (J) and the provider's public documents. The `/oauth2/*` endpoints answer errors in the
//! RFCs' JSON (`error`, `error_description`), not the envelope.

mod authorize;
mod backchannel;
mod clients;
mod discovery;
mod pages;
mod protocol;
mod token;

use idconsent_oidc::OidcClientError;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(token::token)
        .service(backchannel::bc_authorize)
        .service(authorize::authorize_get)
        .service(authorize::authorize_post)
        .service(token::userinfo_get)
        .service(token::userinfo_post)
        .service(token::revoke)
        .service(token::introspect)
        .service(discovery::openid_configuration)
        .service(clients::configure)
        .service(clients::read)
        .service(clients::rotate_secret);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.oidc))
        .app_data(crate::http::extract::data(&services.oidc_clients))
        .app_data(actix_web::web::Data::new(services.page_nonces.clone()));
}

impl From<OidcClientError> for ApiError {
    fn from(error: OidcClientError) -> Self {
        match error {
            OidcClientError::Invalid(errors) => ApiError::validation(errors),
            OidcClientError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
