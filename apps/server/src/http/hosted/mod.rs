//! Hosted approval pages for email recipients (crate `idconsent-hosted`): a mandate addressed to
//! an email address is decided at `{base}/mandates/{id}`, a signature request's signers sign at
//! `{base}/sign/{id}` — the page shows what is asked, confirms the address with an emailed code,
//! makes a passkey in the browser and asserts with it over a challenge committing to what is
//! shown, then approves or declines.
//!
//! No authentication but the page token the emailed code buys: the id alone shows the terms (as
//! the emailed link does) and decides nothing.

mod mandate;
pub mod page;
mod signature;
mod steps;

use idconsent_hosted::HostedError;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::http::error::ApiError;

pub fn routes(config: &mut ServiceConfig) {
    config
        .service(mandate::page)
        .service(mandate::send_code)
        .service(mandate::verify_code)
        .service(mandate::passkey_registration)
        .service(mandate::passkey_assertion)
        .service(mandate::decide)
        .service(signature::page)
        .service(signature::send_code)
        .service(signature::verify_code)
        .service(signature::document)
        .service(signature::passkey_registration)
        .service(signature::passkey_assertion)
        .service(signature::decide);
}

/// The services this area's handlers take (beyond the doors `http::register` adds).
pub fn register(config: &mut actix_web::web::ServiceConfig, services: &crate::wiring::Services) {
    config
        .app_data(crate::http::extract::data(&services.hosted))
        .app_data(crate::http::extract::data(&services.signatures))
        .app_data(crate::http::extract::data(&services.send_limits));
}

impl From<HostedError> for ApiError {
    fn from(error: HostedError) -> Self {
        use idconsent_kernel::ErrorCategory;
        match error {
            HostedError::NotFound => ApiError::not_found("Not found"),
            HostedError::NotPending(message) => ApiError::new(ErrorCategory::Conflict, message),
            HostedError::TooSoon { retry_after_secs }
            | HostedError::Locked { retry_after_secs } => {
                ApiError::rate_limited(error.to_string(), retry_after_secs)
            }
            HostedError::WrongCode { attempts_left } => ApiError::new(
                ErrorCategory::Unauthorized,
                format!("Wrong or expired code ({attempts_left} attempts left)"),
            ),
            HostedError::NoToken => ApiError::new(ErrorCategory::Unauthorized, error.to_string()),
            HostedError::Passkey(reason) => ApiError::new(
                ErrorCategory::Unauthorized,
                format!("The passkey step did not verify: {reason}"),
            ),
            HostedError::Changed => ApiError::new(ErrorCategory::Conflict, error.to_string())
                .with_details(vec![idconsent_kernel::FieldError::new(
                    "contextHash",
                    "is not what the page shows now; reload the page",
                )]),
            HostedError::Quota {
                quota,
                retry_after_secs,
            } => ApiError::quota_exceeded(quota, retry_after_secs),
            HostedError::Unavailable(source) => ApiError::failure(&*source),
        }
    }
}
