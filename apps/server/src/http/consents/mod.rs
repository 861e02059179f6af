//! Consent sessions (spec §4.1, CONTRACT §4): signed requests (S), and the QR image (no auth).

mod create;
mod qr;
mod read;
mod sandbox;

use idconsent_access::Caller;
use idconsent_consent::{ConsentError, Requester};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(create::create)
        .service(read::get)
        .service(qr::image)
        .service(sandbox::approve)
        .service(sandbox::reject);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.consents))
        .app_data(crate::http::extract::data(&services.consent_approvals))
        .app_data(crate::http::extract::data(&services.endusers));
}

/// The application behind a signed request, in the consent domain's terms.
pub fn requester(caller: &Caller) -> Requester {
    let application = &caller.application;
    Requester {
        application_id: application.id.clone(),
        client_id: application.client_id.clone(),
        environment: caller.environment,
        allowed_intents: application.request_types.iter().collect(),
    }
}

impl From<ConsentError> for ApiError {
    fn from(error: ConsentError) -> Self {
        match error {
            ConsentError::Invalid(errors) => ApiError::validation(errors),
            ConsentError::RateLimited {
                message,
                retry_after_secs,
            } => ApiError::rate_limited(message, retry_after_secs),
            ConsentError::QuotaExceeded {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            ConsentError::Gone(message) => ApiError::gone(message),
            ConsentError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
