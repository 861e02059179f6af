//! Signature requests (spec §4.9, CONTRACT §7): signed requests (S) and the sandbox helper.

mod create;
mod read;
mod sandbox;

use idconsent_access::Caller;
use idconsent_signature::{Requester, SignatureError};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(create::create)
        .service(read::get)
        .service(read::certificate)
        .service(sandbox::sign);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config.app_data(crate::http::extract::data(&services.signatures));
}

/// The application behind a signed request, in the signature domain's terms.
pub fn requester(caller: &Caller) -> Requester {
    let application = &caller.application;
    Requester {
        application_id: application.id.clone(),
        environment: caller.environment,
        default_callback_url: Some(application.callback_url.as_str().to_owned()),
    }
}

impl From<SignatureError> for ApiError {
    fn from(error: SignatureError) -> Self {
        match error {
            SignatureError::Invalid(errors) => ApiError::validation(errors),
            SignatureError::TooLarge(limit) => ApiError::payload_too_large(limit),
            SignatureError::Limited {
                message,
                retry_after_secs,
            } => ApiError::rate_limited(message, retry_after_secs),
            SignatureError::Busy { retry_after_secs } => ApiError::unavailable(
                "Every document parser is busy; retry later",
                retry_after_secs,
            )
            .with_cause("document_parsers"),
            error @ SignatureError::CertificatePending { retry_after_secs } => {
                ApiError::unavailable(error.to_string(), retry_after_secs)
                    .with_cause("timestamp_authority")
            }
            SignatureError::Unavailable(source) => ApiError::failure(&*source),
            // A stored file is gone: the caller can do nothing about it and retrying will not
            // bring it back (410, docs/api-design.md); the operator must know (issue 31 §10).
            error @ SignatureError::DocumentMissing => {
                tracing::error!("a signature request's document is missing from the file store");
                ApiError::gone(error.to_string())
            }
            other => ApiError::new(other.category(), other.to_string()),
        }
    }
}
