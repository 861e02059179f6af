//! Identity verification (spec §4.10, CONTRACT §7): signed requests (S). Analysis runs off the
//! request, in the `identity-analysis` workers.

mod chip;
mod liveness;
mod verify;
mod views;

use idconsent_access::Caller;
use idconsent_verification::{Requester, VerificationError};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(verify::submit)
        .service(verify::get)
        .service(liveness::liveness)
        .service(chip::challenge);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.identity));
}

/// The application behind a signed request, in the verification domain's terms.
fn requester(caller: &Caller) -> Requester {
    let application = &caller.application;
    Requester {
        application_id: application.id.clone(),
        environment: caller.environment,
        default_callback_url: Some(application.callback_url.as_str().to_owned()),
    }
}

impl From<VerificationError> for ApiError {
    fn from(error: VerificationError) -> Self {
        match error {
            VerificationError::Invalid(errors) => ApiError::validation(errors),
            VerificationError::TooLarge(limit) => ApiError::payload_too_large(limit),
            VerificationError::QuotaExceeded {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            VerificationError::SandboxCapReached {
                retry_after_secs, ..
            } => ApiError::rate_limited(error.to_string(), retry_after_secs),
            VerificationError::Unavailable(source) => ApiError::failure(&*source),
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
